"""`forge node add|remove|set`: inventory edits that keep comments, order and layout."""
