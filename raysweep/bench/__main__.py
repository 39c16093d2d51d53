from raysweep.bench.stack import main

raise SystemExit(main())
