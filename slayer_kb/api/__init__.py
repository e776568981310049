"""The ``KnowledgeBase``'s public objects for the commands beyond saving and finding: a memory's
history (``kb.history``), work with other clones (``kb.team``), SLayer's and Engram's formats
(``kb.interchange``), and the file checks (``checks``), which need no KB. The CLI and the MCP
server reach the operations (``ops``) only through these and ``KnowledgeBase``."""
