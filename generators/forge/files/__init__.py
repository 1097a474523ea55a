"""Reading and writing files safely: the one guarded reader (textguard), forge's data files, the YAML
dialect and headers forge writes, the journaled folder swap, the repository lock and where things live."""
