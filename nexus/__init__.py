"""nexus: shared, durable, inspectable memory for AI agents that work together.

The package imports nothing heavy at the top level: the commands an agent runs before every turn
(``log append``, ``log read``, ``brief``, ``checkpoint save``) must start fast.
"""

__version__ = "0.1.0"
