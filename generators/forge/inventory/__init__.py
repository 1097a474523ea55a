"""Load an inventory file, check it, and hand back the typed `Inventory` with line numbers."""
from forge.inventory.loader import LoadedInventory, load_inventory, load_inventory_text

__all__ = ["LoadedInventory", "load_inventory", "load_inventory_text"]
