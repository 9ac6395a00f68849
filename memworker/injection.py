"""Screening stored text for instructions aimed at whoever reads the memory later (prompt injection).

A memory is what a speaker said; text that reads as an instruction to an AI ("ignore your previous
instructions", "the assistant reading this should…", a spoofed system or tool message, a request to
send data somewhere) is flagged so that it is stored as a quote, never ranked as a preference or a
fact. ``screen`` names the signals that fired; ``is_instruction_like`` says whether any did.

The text is first normalised for screening only (the stored text is unchanged): Unicode
compatibility forms (full-width and mathematical letters), invisible characters (zero-width, soft
hyphen), Cyrillic and Greek look-alikes inside Latin words, digits used as letters inside words
(``ign0re``), letters spaced apart (``i g n o r e``) and words joined by ``_ . -``. Text that decodes
(base64, hex bytes, reversed, ROT13) to an instruction is flagged ``encoded``.

These are rules: they catch common phrasings in the languages below and miss paraphrases they do not
anticipate. The figures (development set, held-out set, false positives on real conversations) are
printed by ``benchmarks/poisoning_bench.py``.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import re
import unicodedata

_INVISIBLE = re.compile("[\u00ad\u034f\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff]")
# Cyrillic and Greek letters that look like Latin ones (applied only inside words that also hold Latin letters)
_LOOKALIKE = str.maketrans(
    "аеорсухіјѕԁӏАВЕКМНОРСТХІЈЅαοριτυνκΑΒΕΗΙΚΜΝΟΡΤΧΥΖ",
    "aeopcyxijsdlABEKMHOPCTXIJSaopitvvkABEHIKMNOPTXYZ",
)
_LEET = str.maketrans("0134579@$", "oieastgas")
_WORDISH = re.compile(r"[^\W_]+", re.UNICODE)
_SPACED = re.compile(r"(?<!\S)((?:[A-Za-z] ){2,}[A-Za-z])(?!\S)")
_JOINED = re.compile(r"(?<=[A-Za-z])[_.\-]+(?=[A-Za-z])")


def normalise(text: str) -> str:
    """The text as the screen reads it (see the module docstring)."""
    if not text.isascii():
        text = _INVISIBLE.sub("", unicodedata.normalize("NFKC", text))

        def fold(m: re.Match) -> str:
            w = m.group(0)
            return w.translate(_LOOKALIKE) if any("a" <= c.lower() <= "z" for c in w) else w

        text = _WORDISH.sub(fold, text)
    if any(c.isdigit() for c in text):
        text = _WORDISH.sub(lambda m: m.group(0).translate(_LEET)
                            if re.search(r"[A-Za-z]", m.group(0)) and re.search(r"\d", m.group(0)) else m.group(0), text)
    text = _SPACED.sub(lambda m: m.group(1).replace(" ", ""), text)
    return _JOINED.sub(" ", text)


_ADDRESSEE = r"(?:ai|a\.i\.|assistant|chat ?bot|bot|llm|language model|gpt\w*|claude|copilot|agent)"
_RULES = (r"(?:instructions?|directives?|rules|guidance|guidelines|prompts?|context|directions|programming|messages?"
          r"|polic(?:y|ies)|constraints|restrictions|orders|commands|training|system message)")

# "answer" and "from now on / always / only" in Spanish, French, German, Italian, Portuguese, Dutch
_ANSWER_XX = r"\b(?:respond[ea]s?|responde[rd]?|contest[ae]\w*|r[ée]ponds?|r[ée]pondez|antworte\w*|rispond\w*|antwoord\w*)\b"
_ALWAYS_XX = (r"\b(?:siempre|solo|solamente|toujours|seulement|uniquement|immer|nur|sempre|soltanto|apenas|altijd|alleen"
              r"|désormais|dorénavant)\b|\ba partir de (?:ahora|agora)\b|\bdesde ahora\b|\bde ahora en adelante\b"
              r"|\bà partir de maintenant\b|\bvon nun an\b|\bab (?:jetzt|sofort)\b|\bd'ora in poi\b|\bda ora in poi\b"
              r"|\bde agora em diante\b|\bvanaf nu\b")

SIGNALS: dict[str, str] = {
    # "ignore / forget / drop … previous instructions", "the instructions above are outdated"
    "override": (
        r"\b(?:ignore|disregard|forget|drop|discard|skip|override|bypass|abandon|stop following|never mind|set aside)\b"
        r"(?:\W+\w+){0,5}?\W+" + _RULES + r"\b"
        r"|\b(?:ignore|disregard|forget) (?:everything|all|anything) (?:you|that|above|before|said|prior)"
        r"|\b(?:ignore|disregard) (?:the |my |this |their |the user'?s )?(?:question|request|query)\b"
        r"|\b(?:previous|prior|earlier|above|original|old)\s+" + _RULES + r"\s+(?:are|is|were)\s+(?:now\s+)?"
        r"(?:outdated|obsolete|void|cancell?ed|revoked|invalid|no longer)"
        r"|" + _RULES + r" (?:above|before this|so far) (?:are|is) (?:now )?(?:outdated|obsolete|void|cancell?ed|invalid)"
        r"|\b(?:previous|prior|earlier) " + _RULES + r" no longer appl"
        r"|\bnew (?:instructions?|rules?|directives?|orders)\b\s*[:\-]|\b(?:here'?s|here is|this is) (?:a|your) new (?:directive|instruction|rule)"
        r"|\b(?:follow|obey) (?:only )?(?:this message|these instructions|my (?:instructions|orders|commands|rules)|the following"
        r"|the ones below)\b"
        r"|\byour (?:only|sole|new|real) (?:job|task|goal|purpose|mission) (?:now )?is\b"
        r"|\b(?:top|highest) priority instructions?|\bpriority instructions? follow"
    ),
    # a message addressed to an AI: "Assistant: …", "hey chatbot, …", "note to the AI"
    "addressed to an AI": (
        r"(?:^|[\n.!?>\"'(:*#\-]\s*|\b(?:hey|hi|dear|attention|ok|okay|yo)\W+)(?:the |dear |any |all )?"
        r"(?:" + _ADDRESSEE + r"|model)s?\s*:"
        r"|\b(?:hey|hi|dear|attention|ok|okay|yo)\W+(?:the )?" + _ADDRESSEE + r"s?\b\s*[,:!]"
        r"|[,;]\s*(?:the )?" + _ADDRESSEE + r"s?\s*[.!]"
        r"|(?:note|message|instructions?|reminder|directive|request|memo)\s+(?:to|for)\s+(?:the |any |all |whatever |every )?"
        r"(?:" + _ADDRESSEE + r"|model|system|reader)s?\b"
        r"|\b" + _ADDRESSEE + r"s?,? (?:you must|you should|please|remember to|make sure|from now on|from this point)"
    ),
    # "the assistant reading this should …", "whoever summarises these notes needs to …"
    "indirect instruction": (
        r"\b(?:the|any|every|an?|whatever|whichever|this) (?:" + _ADDRESSEE + r"|model)s?\b(?:\W+\w+){0,6}?\W+"
        r"(?:should|must|needs? to|has to|have to|ought to|shall|is (?:required|instructed|expected|supposed|told|asked) to"
        r"|are (?:required|instructed|expected|supposed|told|asked) to)\b"
        r"|\bwhoever (?:reads|summari[sz]es|retrieves|processes|sees|answers|finds|receives)\b(?:\W+\w+){0,6}?\W+"
        r"(?:should|must|needs? to|has to|ought to|is (?:required|instructed|supposed) to)\b"
        r"|\b(?:the|any) (?:" + _ADDRESSEE + r"|model) (?:answering|reading|retrieving|processing|summari[sz]ing|seeing)\b"
        r"(?:\W+\w+){0,6}?\W+(?:said|say|says|tell|told|state|answer|reply|respond|recommend|mention|claim)"
        r"|\bwhen this (?:gets |is )?(?:summari[sz]ed|retrieved|read)\b[^.\n]{0,30}\b(?:needs? to|must|should)"
        r"|\b(?:future|later|next) (?:versions?|instances?|copies) of you\b"
    ),
    # answer-shaping directives: "always reply …", "respond to every question with …", "when asked …, say …"
    "answer directive": (
        r"\b(?:from now on|from (?:here|this point) (?:on|onwards?|forward)|henceforth|for the rest of (?:this|the) "
        r"(?:chat|conversation|session))\b(?:\W+\w+){0,4}?\W+(?:answer|respond|reply|speak|talk|write|say|call|use|act|be|behave|"
        r"only|never|always|you|agree|obey|refer|treat|pretend|play|stay)\b"
        r"|\byou (?:must|should|will|shall|are to) (?:always|never|now|only)\b"
        r"|\byou are now (?:an? |my |the |in |called |named |free|unrestricted|jailbroken|no longer|dan\b|\w+bot\b|\w+gpt\b)"
        r"|\b(?:always|never|only) (?:answer|respond|reply|claim|state|recommend|refer|describe)\b"
        r"|\b(?:respond|reply|answer) (?:to )?(?:every|all|each|any) (?:question|query|message|prompt)s?\b"
        r"|\b(?:respond|reply|answer|say)(?: only| just| simply| exactly)? (?:with|in) (?:the (?:word|phrase|letter|text)\b|emojis?\b"
        r"|['\"‘“]|(?:yes|no|ok)\b)"
        r"|\b(?:respond|reply|answer)\w* (?:\w+ ){0,3}(?:only|exclusively) (?:with|in|from)\b"
        r"|\b(?:answer|respond|reply|speak|talk|write)\b[^.!?\n]{0,40}?\b(?:in|with|using) (?:a |an )?\w+ "
        r"(?:tone|style|voice|accent|language|dialect)\b|\b(?:answer|respond|reply) sarcastically"
        r"|\b(?:when|if|whenever) (?:you are |you're |anyone |someone |somebody |the user |a user |they |i |people )?(?:is |are )?"
        r"(?:asked|asks?|inquires?) (?:about|what|when|where|who|whether|if)\b[^.!?\n]{0,80}?\b(?:say|answer|respond|reply|tell|claim|state)"
        r"|\btell (?:whoever|anyone who|everyone who|anybody who) (?:asks|wants)\b"
        r"|\b(?:questions?|queries) about \w+ (?:must|should|are to|have to) be answered"
        r"|\b(?:is|are) always (?:to be )?reported as\b|\bregardless of what (?:she|he|they|the user|anyone|i) says?\b"
        r"|\bagree with everything (?:the user|i|they|he|she) says?\b"
        r"|\bdo not (?:tell|reveal|mention|disclose) (?:the user|anyone|this)\b|\bnever admit\b"
    ),
    # personas and jailbreak framings
    "role-play": (
        r"\brole-?\s?play(?:ing)? (?:as|time)\b|\broleplay\b|\b(?:stay|remain|staying) in character\b|\bbreak(?:ing)? character\b"
        r"|\b(?:take on|assume|adopt) the (?:persona|role|character)\b|\bplay the role of\b"
        r"|\bpretend (?:to be|you are|you're) (?:an?|my|the|\w+'s)\b|\bpretend (?:that )?you(?:'re| are)\b"
        r"|\bact (?:as|like) (?:if|you're|you are)\b|\bact as (?:a|an|my)\b"
        r"|\blet'?s play a game\W+(?:you|where you)\b"
        r"|\bimagine (?:you(?:'re| are)) (?:an? |my )?(?:\w+ ){0,2}(?:ai|bot|assistant|model|gpt\w*|chatbot)\b"
        r"|\byou(?:'re| are)(?: now)? (?:an? |my )?(?:\w+ ){0,2}(?:ai|chatbot|assistant|gpt\w*|llm) (?:called|named|without|with no|that|who)\b"
        r"|\byou (?:will|shall|must|should|are going to) (?:now )?(?:behave|pretend|roleplay|act as|act like)\b"
        r"|\bdeveloper mode\b|\bjailbreak|\bdo anything now\b|\bdan mode\b"
        r"|\b(?:no|without (?:any )?)(?:restrictions|filters|limits|content policy|rules)\b(?: or \w+)? (?:and|or)? ?(?:answers?|responds?)"
        r"|\b(?:has|have|with) no (?:content policy|restrictions|filters)\b|\bunfiltered (?:ai|assistant|model|bot|mode)\b"
        r"|\b(?:all )?(?:restrictions|filters|limits|safety checks|security checks) (?:are|is|have been|has been) (?:now )?"
        r"(?:lifted|disabled|removed|off)\b"
        r"|\b(?:safety|security|content) (?:layer|filter|checks?|guidelines|restrictions|policy) (?:has|have|is|are) "
        r"(?:been )?(?:disabled|removed|lifted|turned off|suspended)\b"
    ),
    # spoofed chat-template, system or admin messages
    "system spoof": (
        r"<\|?\s*/?\s*(?:system|im_start|im_end|end|endoftext|user|assistant|sys)\s*\|?>|<<\s*/?\s*sys\s*>>|</?system>"
        r"|\[/?\s*(?:inst|sys|system(?: message| prompt| note)?|admin(?: override)?|developer(?: message)?)\s*\]"
        r"|#{2,}\s*(?:system|instructions?|admin|override|developer)\b"
        r"|\b(?:system|admin|administrator|developer|root)\s+(?:override|notice|message|update|policy|mode|instruction)s?\b"
        r"|\bsystem prompt\b|(?:^|\n)\s*(?:system|assistant|developer|admin)\s*:"
        r"|\bpolicy update\s*:"
    ),
    # spoofed tool calls, agent actions, destructive commands
    "tool spoof": (
        r"<\s*/?\s*(?:tool_call|tool_use|tool_result|function_call|function_calls|invoke|tool)\b"
        r"|\"(?:tool|function|name|tool_name)\"\s*:\s*\"[^\"]*\"\s*,\s*\"(?:arguments|args|parameters|input)\""
        r"|\"(?:function_call|tool_calls?|tool_use)\"\s*:"
        r"|(?:^|\n)\s*action(?: input)?\s*:\s*\S"
        r"|\b(?:use|call|invoke|run|trigger|execute) (?:the |your )?(?:\w+ )?(?:tool|function|plugin)\b"
        r"|\b(?:curl|wget)\s+(?:-\S+\s+)*(?:https?|ftp)://|\brm\s+-rf\b|\bdrop\s+table\b"
        r"|\b(?:delete|remove|erase|wipe|rename|move|upload|encrypt) (?:all|every|each)(?: of)? (?:the |my |your |their )?"
        r"(?:files?|folders?|documents?|emails?|data|memories|records)\b"
        r"|\bthe user'?s (?:files?|folders?|documents?|downloads|desktop|emails?|inbox|passwords?|account|data|credentials)\b"
    ),
    # asking for data to be shown, sent or encoded somewhere
    "exfiltration": (
        r"!\[[^\]]*\]\(\s*[a-z]+://[^)\s]*[?&][^)\s]*="
        r"|\{\{\s*[\w.]+\s*\}\}|\[insert[_ ]\w+\]"
        r"|\b(?:send|forward|email|mail|post|upload|transmit|leak|export|append|encode|open|fetch)\b[^.\n]{0,80}?"
        r"(?:\b[\w.+-]+@[\w-]+\.[a-z]{2,}\b|\b(?:https?|ftp)://)"
        r"|\b(?:reveal|print|output|show|display|dump|leak|disclose|expose|repeat|tell me|give me)\b[^.\n]{0,40}?"
        r"\b(?:system prompt|hidden (?:configuration|config|instructions|prompt|settings)|(?:your|the) (?:configuration|config) "
        r"(?:settings)?|api keys?|(?:stored |saved )?passwords?|(?:your|the) instructions|initial instructions)\b"
        r"|\b(?:repeat|print|output|copy|show)\b[^.\n]{0,60}?(?:\b(?:all |the )?(?:text|words|everything|messages?) "
        r"(?:above|before)|\b(?:said|written|typed|sent) (?:above|before)|\bverbatim\b|\bword for word\b)"
        r"|\b(?:send|forward|list|dump|export|summari[sz]e|print|reveal|output|show)\b(?: me)?[^.\n]{0,40}?\b(?:every|all|each)\b"
        r"[^.\n]{0,20}?\b(?:saved |stored |private )?memor(?:y|ies)\b(?: (?:you have|in this|stored|saved))?"
        r"|\b(?:include|append|add|put|encode|embed)\b[^.\n]{0,30}?\bthe user'?s\b"
    ),
    # text hidden from a human reader
    "hidden text": (
        r"<!--[\s\S]*?\b(?:ai|assistant|model|instructions?|ignore|disregard|system|prompt)\b"
        r"|\bdisplay\s*:\s*none\b|\bvisibility\s*:\s*hidden\b|^\s*\[//\]\s*:\s*#|\n\s*\[//\]\s*:\s*#"
    ),
    # writing rules into the memory itself
    "memory rule": (
        r"(?:^|[.!?:;]\s+|\bplease\s+)(?:remember|save|store|keep|commit|add|write|record|make a note|note)\b[^.\n]{0,50}?"
        r"\b(?:permanently|forever|for good|long[- ]term memory|(?:to|in|into) (?:your )?memory\b|as a (?:permanent )?rule"
        r"|(?:all|every|any) (?:future|later|subsequent) (?:sessions?|conversations?|chats?|answers?|questions?|interactions?))"
        r"|\b(?:update|change|overwrite|modify|edit|rewrite) your (?:memory|memories|records|knowledge|notes)\b"
        r"|\b(?:in|for|across|apply it in) (?:all|every) (?:future|later|subsequent) (?:sessions?|conversations?|chats?|answers?"
        r"|replies|responses|interactions?)\b"
    ),
    # a task aimed at whoever writes the answer: its output, its audience ("tell the user…")
    "output directive": (
        r"\b(?:in|into|to|at the (?:start|end|beginning|top|bottom) of|begin|start|end|translate|convert|rewrite|format)"
        r" (?:your|each|every|all|all of your) (?:entire |whole |next |final )?(?:answers?|repl(?:y|ies)|responses?|outputs?)\b"
        r"|\b(?:make sure|ensure) (?:that )?(?:your|the) (?:answer|reply|response|output|summary) (?:says|states|mentions|includes"
        r"|contains|claims|is)\b|\bthe (?:answer|reply|response|output) (?:must|should|needs to|has to) (?:say|state|mention|"
        r"include|contain|claim)\b"
        r"|\b(?:tell|ask|inform|remind|warn|convince|persuade|urge|encourage|let) the (?:user|reader|customer|visitor|human)s?\b"
        r"|\bstate as (?:a )?fact\b|\bno matter (?:the|what the) question\b|\bregardless of the question\b"
        r"|\b(?:decode|decipher|decrypt|reverse|unscramble)\b[^.\n]{0,40}\b(?:and|then) (?:do|follow|execute|obey|run|act on)\b"
        r"|\b(?:run|execute|follow|obey|do) (?:this|it|them) after (?:decoding|deciphering|decrypting|reversing)\b"
        r"|\bdo what it says\b"
    ),
    # the same in other languages (override phrasing, "system prompt", "from now on / always answer")
    "other language": (
        r"\b(?:ignore[zs]?|oublie[zs]?|ne tiens pas compte)\b[^.\n]{0,40}\b(?:instructions?|consignes?|directives?|règles)\b"
        r"|\b(?:prompt|message|invite) (?:du )?système\b"
        r"|\b(?:ignora|ignore|olvida|olvide|descarta|omite)\b[^.\n]{0,40}\b(?:instrucciones|indicaciones|reglas|directrices)\b"
        r"|\b(?:mensaje|prompt|indicaciones) del sistema\b"
        r"|\b(?:ignore|ignora|esqueça|esqueca|desconsidere|descarte)\b[^.\n]{0,40}\b(?:instruções|instrucoes|regras|diretrizes"
        r"|orientações)\b|\b(?:prompt|mensagem) do sistema\b"
        r"|\b(?:ignora|dimentica|trascura|ignorate|dimenticate)\b[^.\n]{0,40}\b(?:istruzioni|regole|direttive)\b"
        r"|\b(?:prompt|messaggio) di sistema\b"
        r"|\b(?:ignorier\w*|vergiss|vergessen sie|missachte\w*)\b[^.\n]{0,40}\b(?:anweisungen|anordnungen|regeln|vorgaben"
        r"|instruktionen)\b|\bsystem-?prompt\b|\bsystemnachricht\b"
        r"|\b(?:negeer|vergeet)\b[^.\n]{0,40}\b(?:instructies|regels|aanwijzingen)\b"
        r"|(?:игнорируй|проигнорируй|забудь|не обращай внимания)[^.\n]{0,40}(?:инструкци|указани|правил)"
        r"|системн\w* (?:промпт|подсказк|сообщени)"
        r"|(?:忽略|无视|忘记|忘掉|不要理会|無視)[^。\n]{0,20}(?:指令|指示|说明|規則|规则|提示)|系统提示|系統提示"
        r"|(?:指示|命令|ルール|プロンプト)[^。\n]{0,20}(?:無視|忘れ)|システムプロンプト"
        r"|(?:지시|명령|규칙|지침)[^.\n]{0,20}(?:무시|잊어)|시스템 프롬프트"
        r"|" + _ANSWER_XX + r"(?:\W+\w+){0,3}?\W+(?:" + _ALWAYS_XX + r")|(?:" + _ALWAYS_XX + r")(?:\W+\w+){0,3}?\W+" + _ANSWER_XX
    ),
}
# A signal is searched for only in a text holding one of its anchors: a word (whole, for short ones)
# or a substring that every match of the signal contains. Most conversation turns hold none, which
# keeps screening cheap; tests/test_injection.py checks that the anchors never hide a match.
_ANCHORS: dict[str, tuple[frozenset[str], tuple[str, ...]]] = {
    "override": (frozenset("drop skip mind aside void job task goal new".split()),
                 ("ignor", "disregard", "forget", "discard", "overrid", "bypass", "abandon", "following", "outdated",
                  "obsolete", "cancel", "revoked", "invalid", "longer", "instruction", "directive", "rule", "order", "message",
                  "follow", "obey", "purpose", "mission", "priority")),
    "addressed to an AI": (frozenset("ai ais".split()),
                           ("bot", "gpt", "a.i.", "llm", "assistant", "agent", "claude", "copilot", "model",
                            "language")),
    "indirect instruction": (frozenset("ai ais".split()),
                             ("bot", "gpt", "a.i.", "llm", "assistant", "agent", "claude", "copilot", "model",
                              "language", "whoever", "when this", "version", "instance", "copies")),
    "answer directive": (frozenset("now rest must should will shall always never only say tell ask asks asked agree "
                                   "regardless".split()),
                         ("henceforth", "here", "point", "respond", "repl", "answer", "tone", "style", "voice",
                          "accent", "language", "dialect", "sarcastic", "inquire", "disclose", "reveal", "mention",
                          "admit", "reported")),
    "role-play": (frozenset("act you dan".split()),
                  ("role", "play", "character", "persona", "pretend", "imagine", "developer", "jailbr", "anything",
                   "restriction", "filter", "limits", "polic", "rules", "unfiltered", "safety", "security")),
    "system spoof": (frozenset("sys inst root end user".split()),
                     ("system", "admin", "developer", "assistant", "polic", "<|", "|>", "<<", "##", "im_start",
                      "im_end", "endoftext")),
    "tool spoof": (frozenset("rm drop name args input delete remove erase wipe rename move upload encrypt".split()),
                   ("tool", "function", "invoke", "action", "plugin", "curl", "wget", "argument", "parameter", "user")),
    "exfiltration": (frozenset("send post add put open show list give tell copy print output dump".split()),
                     ("forward", "mail", "upload", "transmit", "leak", "export", "append", "encode", "fetch",
                      "reveal", "display", "disclose", "expose", "repeat", "summari", "include", "embed", "![",
                      "{{", "[insert")),
    "hidden text": (frozenset(), ("display", "visibility", "<!--", "[//]")),
    "memory rule": (frozenset("add keep note edit".split()),
                    ("remember", "save", "store", "commit", "write", "record", "update", "change", "overwrite",
                     "modify", "future", "later", "subsequent")),
    "output directive": (frozenset("end tell ask let".split()),
                         ("answer", "repl", "respons", "output", "summary", "user", "reader", "customer", "visitor",
                          "human", "fact", "question", "decod", "deciph", "decrypt", "revers", "unscrambl", "what it says")),
    "other language": (frozenset("ne".split()),
                       ("ignor", "oubli", "ne tiens", "systè", "olvid", "descart", "omit", "sistema", "esque",
                        "desconsider", "dimentic", "trascur", "vergiss", "vergessen", "missacht", "system", "negeer",
                        "vergeet", "игнор", "забудь", "не обращай", "систем", "忽略", "无视", "忘", "不要理会",
                        "無視", "系统", "系統", "ルール", "プロンプト", "指示", "命令", "무시", "잊어", "시스템",
                        "respond", "contest", "répond", "repond", "antwort", "rispond", "antwoord")),
}
_COMPILED = {name: re.compile(pattern) for name, pattern in SIGNALS.items()}
_WORDS = re.compile(r"[a-z_]+")


def _signals(low: str) -> list[str]:
    words = set(_WORDS.findall(low))
    return [name for name, rx in _COMPILED.items()
            if (not words.isdisjoint(_ANCHORS[name][0]) or any(s in low for s in _ANCHORS[name][1])) and rx.search(low)]


_BASE64 = re.compile(r"(?<![A-Za-z0-9+/=])[A-Za-z0-9+/]{16,}={0,2}(?![A-Za-z0-9+/=])")
_HEX = re.compile(r"(?:\b[0-9a-fA-F]{2}\b[ ,:]?){8,}")
_COMMON = frozenset("the and a to of is in it you that i for on with was my this be are so have we me your do what "
                    "not but just all at he she they his her".split())


def _readable(data: bytes) -> str | None:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return text if " " in text and all(c.isprintable() or c.isspace() for c in text) else None


def decodings(text: str) -> list[str]:
    """What ``text`` may hide: base64 and hex runs decoded, and, for a text that is not plain language
    (almost none of its words are common English ones), the text reversed and ROT13-decoded."""
    out: list[str] = []
    tokens = text.split()
    long_token = any(len(t) >= 16 for t in tokens)
    for m in _BASE64.finditer(text) if long_token else ():
        chunk = m.group(0)
        try:
            decoded = _readable(base64.b64decode(chunk + "=" * (-len(chunk) % 4), validate=True))
        except (binascii.Error, ValueError):
            decoded = None
        if decoded:
            out.append(decoded)
    for m in _HEX.finditer(text) if sum(len(t) <= 3 for t in tokens) >= 8 else ():
        decoded = _readable(bytes.fromhex(re.sub(r"[^0-9a-fA-F]", "", m.group(0))))
        if decoded:
            out.append(decoded)
    words = re.findall(r"[a-z]+", text.lower())
    if len(words) >= 4 and sum(w in _COMMON for w in words) < 0.15 * len(words):
        out += [text[::-1], codecs.encode(text, "rot13")]
    return out


def screen(text: str) -> list[str]:
    """The names of the injection signals found in ``text``, or in what it decodes to (then with
    ``encoded`` first); empty: none."""
    if not text:
        return []
    norm = normalise(text).lower()
    found = _signals(norm)
    raw = text.lower()
    if raw != norm:
        found += [s for s in _signals(raw) if s not in found]
    if not found:
        for hidden in decodings(text):
            inner = _signals(normalise(hidden).lower())
            if inner:
                return ["encoded"] + inner
    return found


def is_instruction_like(text: str) -> bool:
    """Whether ``text`` reads as an instruction to an AI (see ``screen``)."""
    return bool(screen(text))
