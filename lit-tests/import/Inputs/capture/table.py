"""Writes a kiln-import field table for the fields and kernels given."""
import json

def snode_entry(name, f):
    s = f.snode
    anc = []
    p = s.parent()
    while p is not None:
        anc.append(p.ptr.id)
        p = p.parent()
    return {"name": name, "dtype": str(f.dtype), "shape": list(f.shape), "place": s.ptr.id, "ancestors": anc}

def write(path, fields, kernels):
    t = {"quadrants": "1.3.3", "fields": [snode_entry(n, f) for n, f in fields.items()], "kernels": kernels}
    with open(path, "w") as fh:
        json.dump(t, fh, indent=1)
        fh.write("\n")
