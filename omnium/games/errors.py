class WorkflowError(ValueError):
    """A workflow command was refused; the message says what was wrong. Nothing was saved."""
