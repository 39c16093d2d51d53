"""A sweep's rows read, and the rules for comparing them: groups, evidence, budgets, the one error."""
