"""The ground floor: the words every other floor shares.

Errors, option records and their defaults, typed model configs, the result
type layers return, the export-artifact contract, the stage timer and the
start-up trace. These modules import nothing from the rest of the package
(only each other), so any floor may use them.
"""
