"""What a run is: its options, backend, known issues, state (the stash's keys and the Session) and run file. The
lowest layer of the suite: it imports nothing of the suite's other packages (docs/design.md, "The house")."""
