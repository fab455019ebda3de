"""The network boundary (spec §19.2, §24.4): the policy every way out of a slot obeys, and the egress enforcer.

Below the slots and the agent, above the domain: it imports only ``openbrowse.errors``, ``config``, ``domain``,
``shielding`` and the standard library (plus psutil).
"""
