"""What the tests share and are not tests themselves: loopback stand-ins (claude-mem, the Anthropic Messages API,
OpenAI-compatible servers, claude-mem's compressor), fault injection, the real peers' and local LLM servers'
setup, and the runs several test modules look at."""
