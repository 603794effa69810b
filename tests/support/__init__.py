"""Test infrastructure shared by every test directory (live servers, a manual clock)."""
