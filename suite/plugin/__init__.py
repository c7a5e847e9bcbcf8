"""The pytest plugin: its hooks, the session context, the recorder that writes the run file and the summary. The
top layer: it wires the others together (docs/design.md, "The house")."""
