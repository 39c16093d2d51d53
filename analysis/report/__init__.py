"""The report: its sections, figures, headline findings, summary.json and their two renderings."""
