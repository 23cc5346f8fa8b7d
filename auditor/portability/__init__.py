"""Stage 6: what the findings add up to, per hardware target.

- `score.py`: a 0-100 score per target and overall, from the catalogue's weights
  (rules/scoring.toml);
- `verdict.py`: would the code run there as it is (runs / runs-degraded / fails), and the first
  reasons it would not (rules/verdicts.toml).
"""
