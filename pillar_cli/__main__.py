from pillar_cli.cli import main

main()
