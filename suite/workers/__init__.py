"""The processes that run the tests: crash isolation, GPU sharing, the order tests are handed out, split tests, a
worker's start-up and where its time goes. Imports the session layer only (docs/design.md, "The house")."""
