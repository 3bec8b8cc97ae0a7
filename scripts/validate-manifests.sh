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
# Then every DeviceClass selector (CEL) is evaluated on sample devices, as
# the scheduler does: a vgpu GPU of each compute policy, one without the
# computePolicy attribute, one with no attributes, and another driver's
# device. A selector must pick exactly the devices its class is for and
# must not fail on any (a CEL error on a device aborts the claim's
# allocation, where a missing attribute should only skip the device:
# CELDeviceSelector in k8s.io/api resource/v1 types.go). One line per
# class, `ok cel CLASS` or `FAIL cel CLASS: reason`. And each DaemonSet's
# containers must all name the image that `make image` builds
# (localhost/vgpu/vgpu-node:VERSION, scripts/image.sh): `ok image ...`.
#
# Prints one line per file and version, `ok FILE VERSION` or
# `FAIL FILE VERSION: reason`, then `manifests: N passed, M failed`; exits
# non-zero if anything failed, including a validator that cannot be
# installed, a file with no documents, or a kind the version's schemas lack.
#
# The validator is the PyPI package kubernetes-validate (pinned below; it
# bundles the strict schemas of 1.25..1.37), the CEL evaluator the PyPI
# package cel-python (pinned below; the CEL of Kubernetes' cel-go for what
# the selectors use: ==, &&, `in` on a map, member access), both installed
# on first use into a virtualenv under $VGPU_CACHE. That needs python3 with
# venv (Debian: python3-venv, which scripts/setup-toolchain.sh installs)
# and PyPI.
set -uo pipefail
. "$(dirname "$0")/env.sh"

KUBERNETES_VALIDATE_VERSION=1.37.0
CEL_PYTHON_VERSION=0.5.0
K8S_VERSIONS=(1.34.0 1.35.0 1.36.0 1.37.0)
venv="$VGPU_CACHE/venv-manifests-kv$KUBERNETES_VALIDATE_VERSION-cel$CEL_PYTHON_VERSION"

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
    log="$VGPU_CACHE/venv-manifests.log"
    echo "validate-manifests: installing kubernetes-validate $KUBERNETES_VALIDATE_VERSION and cel-python $CEL_PYTHON_VERSION into $venv" >&2
    if ! { python3 -m venv "$venv" \
           && "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
                  "kubernetes-validate==$KUBERNETES_VALIDATE_VERSION" \
                  "cel-python==$CEL_PYTHON_VERSION"; } >"$log" 2>&1; then
        tail -5 "$log" >&2
        rm -rf "$venv"
        setup_fail "kubernetes-validate: could not install kubernetes-validate==$KUBERNETES_VALIDATE_VERSION cel-python==$CEL_PYTHON_VERSION (log: $log)"
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

# The image `make image` builds (scripts/image.sh), which the DaemonSet
# must name.
version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$VGPU_TOP/userspace/Cargo.toml" | head -n1)
image="localhost/vgpu/vgpu-node:$version"

exec "$venv/bin/python" - "$KUBERNETES_VALIDATE_VERSION" "$VGPU_TOP" "${K8S_VERSIONS[*]}" "$image" "${files[@]}" <<'PY'
import os
import re
import sys

import jsonschema
import yaml
from referencing import Registry, Resource

import kubernetes_validate.utils as kv
from kubernetes_validate.version import __version__ as kv_version

pinned, top, versions, image, files = (sys.argv[1], sys.argv[2], sys.argv[3].split(), sys.argv[4],
                                        sys.argv[5:])
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

# The DeviceClasses' selectors on sample devices.
import celpy  # noqa: E402

# Sample devices as the scheduler gives them to a selector: `driver`, and
# `attributes` by domain (an attribute without a domain is in its driver's).
GPU = {"index": 0, "uuid": "GPU-00000000-0000-4000-8000-000000000000",
       "productName": "sample GPU"}
DEVICES = {
    "fixed": ("vgpu.dev", {**GPU, "computePolicy": "fixed"}),
    "work-conserving": ("vgpu.dev", {**GPU, "computePolicy": "work-conserving"}),
    "no-policy": ("vgpu.dev", GPU),
    "no-attributes": ("vgpu.dev", {}),
    "other-driver": ("gpu.example.com", {"computePolicy": "fixed"}),
}
# Which samples each class must select; a class not listed fails, so that
# a new class comes with its expectation.
SELECTS = {
    "vgpu.dev": {"fixed", "work-conserving", "no-policy", "no-attributes"},
    "fixed.vgpu.dev": {"fixed"},
    "work-conserving.vgpu.dev": {"work-conserving"},
}
cel_env = celpy.Environment()


def select(expression, driver, attrs):
    """True, False, or the error text: `expression` on one device. As in
    Kubernetes, a domain the device has no attribute in reads as an empty
    map (so only a missing attribute, not a missing domain, is an error)."""
    by_domain = {driver: dict(attrs)} if attrs else {}
    for domain in re.findall(r'device\.attributes\["([^"]+)"\]', expression):
        by_domain.setdefault(domain, {})
    activation = celpy.json_to_cel({"device": {"driver": driver, "attributes": by_domain,
                                               "capacity": {}}})
    try:
        r = cel_env.program(cel_env.compile(expression)).evaluate(activation)
    except celpy.CELEvalError as e:
        return f"error: {e.args[0] if e.args else e}"
    if isinstance(r, celpy.CELEvalError):
        return f"error: {r.args[0] if r.args else r}"
    return bool(r) if isinstance(r, celpy.celtypes.BoolType) else f"not a bool: {r!r}"


# The check can fail: a selector that reads the attribute unguarded errs on
# a GPU without it.
unguarded = select('device.attributes["vgpu.dev"].computePolicy == "fixed"', *DEVICES["no-policy"])
if not (isinstance(unguarded, str) and unguarded.startswith("error")):
    failed += 1
    print(f"FAIL cel: an unguarded read of a missing attribute gave {unguarded!r}, not an error")

for path in files:
    try:
        with open(path) as f:
            docs = [d for d in yaml.load_all(f, Loader=StrictLoader) if isinstance(d, dict)]
    except (OSError, yaml.YAMLError):
        continue  # reported above
    for d in docs:
        if d.get("kind") == "DaemonSet":
            pod = ((d.get("spec") or {}).get("template") or {}).get("spec") or {}
            named = {c.get("image") for c in (pod.get("containers") or []) + (pod.get("initContainers") or [])}
            name = f"DaemonSet/{(d.get('metadata') or {}).get('name', '?')}"
            if named == {image}:
                passed += 1
                print(f"ok image {name} {image}")
            else:
                failed += 1
                print(f"FAIL image {name}: names {sorted(map(str, named))}, not {image} (make image)")
            continue
        if d.get("kind") != "DeviceClass":
            continue
        name = (d.get("metadata") or {}).get("name", "?")
        exprs = [s["cel"]["expression"] for s in (d.get("spec") or {}).get("selectors") or []
                 if isinstance(s, dict) and isinstance(s.get("cel"), dict)]
        problems = []
        if name not in SELECTS:
            problems.append("no expected selection for this class in scripts/validate-manifests.sh")
        elif not exprs:
            problems.append("no CEL selector")
        else:
            picked = set()
            for sample, (driver, attrs) in DEVICES.items():
                results = [select(e, driver, attrs) for e in exprs]
                errors = [r for r in results if isinstance(r, str)]
                if errors:
                    problems.append(f"device {sample}: {errors[0]}")
                elif all(results):
                    picked.add(sample)
            if not problems and picked != SELECTS[name]:
                problems.append(f"selects {sorted(picked)}, not {sorted(SELECTS[name])}")
        if problems:
            failed += 1
            print(f"FAIL cel {name}: {'; '.join(problems)}")
        else:
            passed += 1
            print(f"ok cel {name}")

print(f"manifests: {passed} passed, {failed} failed")
sys.exit(1 if failed or not passed else 0)
PY
