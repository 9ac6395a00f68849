from locomo_kit.cli import main

raise SystemExit(main())
