"""Every `forge` command: thin click front-ends that parse flags and call the stages. `main` is the
command group (the `forge` entry point); `common` is what every command shares (--root, exit codes,
the one place errors reach people)."""
