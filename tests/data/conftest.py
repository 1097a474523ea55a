"""Make the helper module of this folder importable whatever pytest's rootdir."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
