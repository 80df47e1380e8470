from inspector.cli.launch import entry

entry()
