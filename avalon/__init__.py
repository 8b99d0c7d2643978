"""The Avalon narrator, installed under one name of its own: ``avalon.services`` (the engine, the
gateways, the command line) and ``avalon.shared`` (what they share). In the repository the two live
at the top, in ``services/`` and ``shared/``; ``avalon/services`` and ``avalon/shared`` are links to
them, so the installed layout and the repository's are the same modules."""
