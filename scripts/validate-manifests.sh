#!/usr/bin/env bash
# Validate the Kubernetes manifests (deploy/kubernetes/*.yaml) against the
# JSON schemas derived from Kubernetes' OpenAPI, in strict mode (a field the
# schema does not know is an error), once for each Kubernetes version the
# manifests support:
#
#   1.34.0 1.35.0 1.36.0 1.37.0
#
# 1.34 is the first release that serves resource.k8s.io/v1 (DeviceClass,
# ResourceClaimTemplate); 1.33's schemas have no such kind, so the manifests
# cannot validate there. Every field the manifests use (DeviceClass
# extendedResourceName, a request's capacity.requests, constraints'
# distinctAttribute) is in the v1 schema of each of 1.34..1.37. The schemas
# do not know feature gates: which gates a cluster needs for these fields to
# take effect is in docs/kubernetes.md.
#
#   scripts/validate-manifests.sh [FILE...]     (default deploy/kubernetes/*.yaml)
#
# Prints one line per file and version, `ok FILE VERSION` or
# `FAIL FILE VERSION: reason`, then `manifests: N passed, M failed`; exits
# non-zero if anything failed, including a validator that cannot be
# installed, a file with no documents, or a kind the version's schemas lack.
#
# The validator is the PyPI package kubernetes-validate (pinned below; it
# bundles the strict schemas of 1.25..1.37), installed on first use into a
# virtualenv under $VGPU_CACHE. That needs python3 with venv (Debian:
# python3-venv, which scripts/setup-toolchain.sh installs) and PyPI.
set -uo pipefail
. "$(dirname "$0")/env.sh"

KUBERNETES_VALIDATE_VERSION=1.37.0
K8S_VERSIONS=(1.34.0 1.35.0 1.36.0 1.37.0)
venv="$VGPU_CACHE/venv-kubernetes-validate-$KUBERNETES_VALIDATE_VERSION"

setup_fail() { # WHAT: REASON
    echo "FAIL $*"
    echo "manifests: 0 passed, 1 failed"
    exit 1
}

# The virtualenv, made once; .installed marks one whose install finished.
if [ ! -f "$venv/.installed" ]; then
    command -v python3 >/dev/null || setup_fail "kubernetes-validate: no python3 (Debian: apt-get install python3 python3-venv)"
    if ! python3 -c 'import venv, ensurepip' 2>/dev/null; then
        setup_fail "kubernetes-validate: python3 has no venv/ensurepip (Debian: apt-get install python3-venv, or run scripts/setup-toolchain.sh)"
    fi
    rm -rf "$venv"
    mkdir -p "$VGPU_CACHE"
    log="$VGPU_CACHE/venv-kubernetes-validate.log"
    echo "validate-manifests: installing kubernetes-validate $KUBERNETES_VALIDATE_VERSION into $venv" >&2
    if ! { python3 -m venv "$venv" \
           && "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
                  "kubernetes-validate==$KUBERNETES_VALIDATE_VERSION"; } >"$log" 2>&1; then
        tail -5 "$log" >&2
        rm -rf "$venv"
        setup_fail "kubernetes-validate: could not install kubernetes-validate==$KUBERNETES_VALIDATE_VERSION (log: $log)"
    fi
    touch "$venv/.installed"
fi

if [ $# -gt 0 ]; then
    files=("$@")
else
    shopt -s nullglob
    files=("$VGPU_TOP"/deploy/kubernetes/*.yaml)
    shopt -u nullglob
    [ ${#files[@]} -gt 0 ] || setup_fail "deploy/kubernetes: no *.yaml manifests"
fi

exec "$venv/bin/python" - "$KUBERNETES_VALIDATE_VERSION" "$VGPU_TOP" "${K8S_VERSIONS[*]}" "${files[@]}" <<'PY'
import os
import re
import sys

import jsonschema
import yaml
from referencing import Registry, Resource

import kubernetes_validate.utils as kv
from kubernetes_validate.version import __version__ as kv_version

pinned, top, versions, files = sys.argv[1], sys.argv[2], sys.argv[3].split(), sys.argv[4:]
passed = failed = 0


def report(ok, name, version, reason=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"ok {name} {version}")
    else:
        failed += 1
        print(f"FAIL {name} {version}: {reason}")


class StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key given twice in one mapping (the API
    server's strict decoding refuses it too; PyYAML keeps the last)."""


def _mapping(loader, node, deep=False):
    seen = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark)
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)

if kv_version != pinned:
    print(f"FAIL kubernetes-validate: the virtualenv has {kv_version}, not {pinned}")
    print("manifests: 0 passed, 1 failed")
    sys.exit(1)
# kubernetes-validate falls back to the newest older schemas it has for a
# version it lacks; insist on each version's own.
bundled = set(kv.all_versions())
for v in versions:
    if v not in bundled:
        failed += 1
        print(f"FAIL kubernetes-validate {pinned} VERSION {v}: no schemas for it")


def all_errors(doc, version):
    """Every strict-schema error of one document, as kubernetes_validate's
    validate() finds them (it stops at the first); its verdict is checked
    against ours, so the two cannot drift apart unnoticed."""
    try:
        kv.validate(doc, version, strict=True)
        verdict = None
    except kv.ValidationError as e:
        verdict = e.message
    except kv.SchemaNotFoundError:
        return [f"no schema for {doc['kind']} {doc['apiVersion']} in Kubernetes {version}"]
    except (kv.VersionNotSupportedError, kv.InvalidSchemaError) as e:
        return [e.message]
    # The schema files, named as kubernetes_validate names them.
    api = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", doc["apiVersion"])
    where = f"kubernetes-json-schema/v{version}-local-strict"
    schema = kv.schema_contents(f"{where}/{doc['kind'].lower()}-{api}.json", version)
    defs = kv.schema_contents(f"{where}/_definitions.json", version)
    registry = Resource.from_contents(defs) @ (Resource.from_contents(schema) @ Registry())
    validator = jsonschema.validators.Draft202012Validator(schema, registry=registry)
    found = sorted(validator.iter_errors(doc), key=lambda e: [str(p) for p in e.path])
    out = [f"{'.'.join(str(p) for p in e.path) or '(document)'}: {e.message}" for e in found]
    if (verdict is None) != (not out):
        return [f"kubernetes_validate says {verdict or 'valid'}, all errors: {out or 'none'}"]
    if len(out) > 5:
        out = out[:5] + [f"and {len(out) - 5} more"]
    return out


def describe(doc):
    kind = doc.get("kind", "?")
    name = (doc.get("metadata") or {}).get("name", "?") if isinstance(doc.get("metadata"), dict) else "?"
    return f"{kind}/{name}"


for path in files:
    rel = os.path.relpath(os.path.abspath(path), top)
    name = path if rel.startswith("..") else rel
    try:
        with open(path) as f:
            docs = [d for d in yaml.load_all(f, Loader=StrictLoader) if d is not None]
        problem = None if docs else "no YAML documents"
    except (OSError, yaml.YAMLError) as e:
        docs, problem = [], f"cannot read: {' '.join(str(e).split())}"
    for d in docs:
        if not isinstance(d, dict) or not d.get("apiVersion") or not d.get("kind"):
            problem = "a document without apiVersion and kind"
            break
    for v in versions:
        if v not in bundled:
            continue
        if problem:
            report(False, name, v, problem)
            continue
        errors = []
        for d in docs:
            try:
                errors += [f"{describe(d)}: {e}" for e in all_errors(d, v)]
            except Exception as e:  # noqa: BLE001 -- a broken document must fail, not crash
                errors.append(f"{describe(d)}: {type(e).__name__}: {e}")
        report(not errors, name, v, "; ".join(errors))

print(f"manifests: {passed} passed, {failed} failed")
sys.exit(1 if failed or not passed else 0)
PY
