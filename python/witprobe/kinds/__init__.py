"""Memory kinds: one typed record per kind of layer memory, and the registry that holds them.

See :mod:`witprobe.kinds.base` for the record and :mod:`witprobe.kinds.registry` for how a kind
is added (one module plus one registry line).
"""
