try:
    from .cli.main import main
except KeyboardInterrupt:  # Ctrl-C while still importing: no traceback
    raise SystemExit(130) from None

raise SystemExit(main())
