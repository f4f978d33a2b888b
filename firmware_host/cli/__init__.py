"""The command line: the parser, shared arguments, config files, terminal text."""
