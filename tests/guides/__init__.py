"""Replays of the reference guides (/work/shared/reference): their configs, commands and checks."""
