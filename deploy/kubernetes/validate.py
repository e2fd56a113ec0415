"""Validates Kubernetes manifests against the Kubernetes OpenAPI schemas that the
kubernetes-validate package (PyPI) ships, offline and strictly (unknown fields fail).

    python validate.py VERSION FILE...    exit 0 when every document of every file is valid;
                                          1 with one line per invalid document otherwise.
"""
import sys

import kubernetes_validate
import yaml


def main() -> int:
    version, files = sys.argv[1], sys.argv[2:]
    bad = 0
    for path in files:
        with open(path, encoding="utf-8") as f:
            for i, doc in enumerate(yaml.safe_load_all(f)):
                if doc is None:
                    continue
                try:
                    kubernetes_validate.validate(doc, version, strict=True)
                    print(f"{path}[{i}] {doc['kind']}/{doc['metadata']['name']}: valid")
                except kubernetes_validate.ValidationError as e:
                    bad += 1
                    where = "/".join(str(p) for p in e.path)
                    print(f"{path}[{i}]: invalid at {where}: {e.message}")
                except kubernetes_validate.InvalidSchemaError as e:
                    bad += 1
                    print(f"{path}[{i}]: {e}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
