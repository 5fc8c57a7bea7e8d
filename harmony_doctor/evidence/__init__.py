"""The evidence a paste holds of a Harmony failure, read by what it is, not by its wording.

Under the catalogue (faults/), which knows writers' words, each module here reads one kind of
evidence the Harmony format leaves, in any text: `ids` (runs of integers judged by what they
decode to), `markup` (special tokens by name or id, and their stripped forms, and where they
sit), `context` (the server every piece of a paste names together), `prose` (what a
description with no evidence names). What an error says in the grammar's terms is read where
`scan` reads it too: the catalogue's generic forms (faults/generic.py). `combine` puts them
together for `explain`.
"""
