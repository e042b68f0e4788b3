#!/usr/bin/env python3
"""The checks of scripts/check-chart that need Python (run with the venv's interpreter).

  validate RENDERED --kube-version V --defaults config/default.toml
      Every object of a `helm template` output against the Kubernetes OpenAPI schemas of
      version V (kubernetes-validate, strict: unknown fields are errors). Custom resources
      have no schema there: the ones this chart renders (ServiceMonitor) are named as not
      schema-checked, any other unknown kind fails. Then what no schema sees: the objects
      agree with each other (selectors, named ports, referenced ConfigMaps and
      ServiceAccounts, hook order), and the rendered config file is TOML whose every key and
      value type is one of config/default.toml's (the gateway refuses unknown keys at
      start-up), as are the INTERLOCK__ variables.

  drift SCHEMA --defaults config/default.toml
      values.schema.json's `config` section against config/default.toml: every key of the
      defaults is in the schema unless the chart manages it, and the schema names no key
      the gateway does not have.

  smoke RENDERED --bin INTERLOCK
      Starts the gateway as the rendered Deployment would and probes what the chart wired
      (see smoke() below); needs a network namespace of its own (ports 8080, 9464). Exits
      3 when the rendering cannot be started here (secret files, migrate_on_start).

  checkov-report JSON
      Prints the failed and skipped checks of a checkov JSON report; exits 1 on a failure.
"""

import argparse
import json
import sys
import tomllib

import yaml

# Custom resources the chart may render, which kubernetes-validate has no schema for.
KNOWN_CRDS = {("monitoring.coreos.com/v1", "ServiceMonitor")}

# Keys of config/default.toml the chart sets from its own values (not in the schema's config).
MANAGED = {
    ("server", "listen"),
    ("control", "host"), ("control", "port"), ("control", "dbname"), ("control", "user"),
    ("control", "password_env"), ("control", "password_file"),
    ("control", "tls_mode"), ("control", "tls_ca_file"),
    ("metrics", "listen"), ("metrics", "allow_non_loopback"),
    ("rate_limit", "backend"), ("rate_limit", "redis_url"),
}


class Failures:
    def __init__(self):
        self.items = []

    def add(self, what):
        self.items.append(what)

    def check(self, cond, what):
        if not cond:
            self.add(what)


def name_of(doc):
    return f"{doc.get('kind')}/{doc.get('metadata', {}).get('name')}"


def load_docs(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def toml_type_ok(default, value):
    """Whether `value` (parsed from the rendered file) deserializes where `default` does."""
    if isinstance(default, bool):
        return isinstance(value, bool)
    if isinstance(default, int):
        return isinstance(value, int) and not isinstance(value, bool)
    if isinstance(default, float):
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if isinstance(default, str):
        return isinstance(value, str)
    if isinstance(default, list):
        return isinstance(value, list)
    if isinstance(default, dict):
        return isinstance(value, dict)
    return False


def check_config(text, defaults, where, fail):
    try:
        cfg = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        fail.add(f"{where}: the config file is not TOML: {e}")
        return None
    for section, table in cfg.items():
        if section not in defaults:
            fail.add(f"{where}: [{section}] is not a section of config/default.toml")
            continue
        if not isinstance(table, dict):
            fail.add(f"{where}: {section} is not a table")
            continue
        for key, value in table.items():
            if key not in defaults[section]:
                fail.add(f"{where}: {section}.{key} is not a key of config/default.toml")
            elif not toml_type_ok(defaults[section][key], value):
                fail.add(f"{where}: {section}.{key} = {value!r} has not the type of its default "
                         f"{defaults[section][key]!r}")
    return cfg


def env_key_exists(name, defaults):
    parts = name[len("INTERLOCK__"):].lower().split("__")
    return len(parts) == 2 and parts[0] in defaults and parts[1] in defaults[parts[0]]


def selects(selector, labels):
    return all(labels.get(k) == v for k, v in (selector or {}).items())


def all_errors(doc, kube_version):
    """Every error of a document kubernetes-validate refused (it raises only the first), with
    the schemas and resolution it uses (kubernetes-validate is pinned in check-chart)."""
    import re

    import jsonschema
    from kubernetes_validate import utils as kv
    from referencing import Registry, Resource

    mm = kv.major_minor(kube_version)
    version = [v for v in kv.all_versions() if kv.major_minor(v) <= mm][-1]
    schema_dir = f"v{version}-local-strict"
    api = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", doc["apiVersion"])
    schema = kv.schema_contents(f"kubernetes-json-schema/{schema_dir}/{doc['kind'].lower()}-{api}.json", kube_version)
    defs = kv.schema_contents(f"kubernetes-json-schema/{schema_dir}/_definitions.json", kube_version)
    registry = Resource.from_contents(defs) @ (Resource.from_contents(schema) @ Registry())
    validator = jsonschema.validators.Draft202012Validator(schema, registry=registry)
    return sorted(("/".join(str(p) for p in e.absolute_path), e.message) for e in validator.iter_errors(doc))


def validate(args):
    import kubernetes_validate
    from kubernetes_validate import utils as kv

    with open(args.defaults, "rb") as f:
        defaults = tomllib.load(f)
    docs = load_docs(args.rendered)
    fail = Failures()
    notes = []
    checked = 0

    for doc in docs:
        key = (doc.get("apiVersion"), doc.get("kind"))
        try:
            kubernetes_validate.validate(doc, args.kube_version, strict=True)
            checked += 1
        except kv.SchemaNotFoundError:
            if key in KNOWN_CRDS:
                notes.append(f"{name_of(doc)} ({key[0]}): a custom resource, not schema-checked "
                             f"(no OpenAPI schema for CRDs in Kubernetes {args.kube_version}); "
                             f"cross-checked against its Service below")
            else:
                fail.add(f"{name_of(doc)}: no schema for {key[0]} {key[1]} in Kubernetes {args.kube_version}")
        except kv.ValidationError:
            for path, message in all_errors(doc, args.kube_version):
                fail.add(f"{name_of(doc)}: {path}: {message}")
        except kv.InvalidSchemaError as e:
            fail.add(f"{name_of(doc)}: {e}")

    by_kind = {}
    for doc in docs:
        by_kind.setdefault(doc["kind"], []).append(doc)
        ns = doc.get("metadata", {}).get("namespace")
        fail.check(ns, f"{name_of(doc)}: no metadata.namespace")

    def hook(doc):
        return doc.get("metadata", {}).get("annotations", {}) or {}

    deployments = by_kind.get("Deployment", [])
    fail.check(len(deployments) == 1, f"expected one Deployment, found {len(deployments)}")
    configmaps = {d["metadata"]["name"]: d for d in by_kind.get("ConfigMap", [])}
    accounts = {d["metadata"]["name"]: d for d in by_kind.get("ServiceAccount", [])}
    configs = {}

    def check_pod(owner, pod_spec, hook_weight=None):
        for c in pod_spec.get("containers", []):
            for e in c.get("env", []):
                n = e["name"]
                if n.startswith("INTERLOCK__"):
                    fail.check(env_key_exists(n, defaults),
                               f"{owner}: {n} names no key of config/default.toml")
                if "value" in e and any(w in n.upper() for w in ("PASSWORD", "SECRET", "TOKEN")):
                    fail.add(f"{owner}: {n} has a plain value")
        for v in pod_spec.get("volumes", []):
            if "configMap" in v:
                cm = configmaps.get(v["configMap"]["name"])
                if cm is None:
                    fail.add(f"{owner}: volume {v['name']} names ConfigMap {v['configMap']['name']}, not rendered")
                    continue
                if hook_weight is not None:
                    w = hook(cm).get("helm.sh/hook-weight")
                    fail.check(w is not None and int(w) < hook_weight,
                               f"{owner}: its ConfigMap {cm['metadata']['name']} is not a hook created before it")
                else:
                    fail.check("helm.sh/hook" not in hook(cm),
                               f"{owner}: its ConfigMap {cm['metadata']['name']} is a hook (deleted after it ran)")
        sa = pod_spec.get("serviceAccountName")
        if sa in accounts and hook_weight is not None:
            w = hook(accounts[sa]).get("helm.sh/hook-weight")
            fail.check(w is not None and int(w) < hook_weight,
                       f"{owner}: its ServiceAccount {sa} is not a hook created before it")
        fail.check(pod_spec.get("automountServiceAccountToken") is False,
                   f"{owner}: automountServiceAccountToken is not false")

    for cm_name, cm in configmaps.items():
        text = (cm.get("data") or {}).get("interlock.toml")
        if text is not None:
            configs[cm_name] = check_config(text, defaults, f"ConfigMap/{cm_name}", fail)
    if len({json.dumps(c, sort_keys=True) for c in configs.values()}) > 1:
        fail.add("the migration Job's config file differs from the gateway's")

    pod_labels = {}
    containers_ports = set()
    for d in deployments:
        owner = name_of(d)
        tpl = d["spec"]["template"]
        pod_labels = tpl["metadata"].get("labels", {})
        fail.check(selects(d["spec"]["selector"]["matchLabels"], pod_labels),
                   f"{owner}: selector does not match its pod labels")
        spec = tpl["spec"]
        check_pod(owner, spec)
        for c in spec["containers"]:
            containers_ports |= {p["name"] for p in c.get("ports", []) if "name" in p}
            fail.check(c.get("args") == ["serve"], f"{owner}: container {c['name']} does not run `serve`")
            for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
                fail.check(probe in c, f"{owner}: no {probe}")
            for h in (c.get("lifecycle") or {}).values():
                fail.check("exec" not in h, f"{owner}: a lifecycle hook runs a command (the image has no shell)")
        cfg = None
        for v in spec.get("volumes", []):
            if "configMap" in v:
                cfg = configs.get(v["configMap"]["name"])
        if cfg:
            server = cfg.get("server", {})
            shutdown = server.get("shutdown_timeout_secs", defaults["server"]["shutdown_timeout_secs"])
            stop = 0
            for c in spec["containers"]:
                stop = max(stop, (((c.get("lifecycle") or {}).get("preStop") or {}).get("sleep") or {}).get("seconds", 0))
            grace = spec.get("terminationGracePeriodSeconds", 30)
            if all(isinstance(x, int) for x in (shutdown, stop, grace)):
                fail.check(grace > shutdown + stop,
                           f"{owner}: terminationGracePeriodSeconds {grace} <= preStop {stop} + shutdown {shutdown}")
            env = {e["name"]: e.get("value") for c in spec["containers"] for e in c.get("env", [])}
            for var, (s, k) in {"INTERLOCK__SERVER__LISTEN": ("server", "listen"),
                                "INTERLOCK__LOG__FORMAT": ("log", "format"),
                                "INTERLOCK__LOG__STREAM": ("log", "stream")}.items():
                if var in env and k in cfg.get(s, {}):
                    fail.check(env[var] == cfg[s][k], f"{owner}: {var}={env[var]} but the file says {s}.{k}={cfg[s][k]}")
            ns = d["metadata"]["namespace"]
            for svc in by_kind.get("Service", []):
                if svc["metadata"]["labels"].get("app.kubernetes.io/component") == "gateway":
                    n = svc["metadata"]["name"]
                    for host in (n, f"{n}.{ns}", f"{n}.{ns}.svc"):
                        fail.check(host in server.get("allowed_hosts", []),
                                   f"{owner}: server.allowed_hosts lacks the Service name {host}")

    for j in by_kind.get("Job", []):
        owner = name_of(j)
        hooks = hook(j).get("helm.sh/hook", "")
        fail.check("pre-install" in hooks and "pre-upgrade" in hooks, f"{owner}: not a pre-install,pre-upgrade hook")
        fail.check("before-hook-creation" in hook(j).get("helm.sh/hook-delete-policy", ""),
                   f"{owner}: no before-hook-creation delete policy")
        spec = j["spec"]["template"]["spec"]
        check_pod(owner, spec, hook_weight=int(hook(j).get("helm.sh/hook-weight", "0")))
        fail.check(spec["containers"][0].get("args") == ["migrate"], f"{owner}: does not run `migrate`")
        for pdb in by_kind.get("PodDisruptionBudget", []):
            fail.check(not selects(pdb["spec"]["selector"]["matchLabels"], j["spec"]["template"]["metadata"]["labels"]),
                       f"{name_of(pdb)} also selects the migration Job's pod")
        if deployments:
            fail.check(spec["containers"][0]["image"] == deployments[0]["spec"]["template"]["spec"]["containers"][0]["image"],
                       f"{owner}: runs another image than the gateway")

    services = by_kind.get("Service", [])
    for svc in services:
        owner = name_of(svc)
        fail.check(selects(svc["spec"]["selector"], pod_labels), f"{owner}: selects no gateway pod")
        for p in svc["spec"]["ports"]:
            tp = p.get("targetPort")
            if isinstance(tp, str):
                fail.check(tp in containers_ports, f"{owner}: targetPort {tp} is no container port")

    for sm in by_kind.get("ServiceMonitor", []):
        owner = name_of(sm)
        sel = sm["spec"]["selector"]["matchLabels"]
        matched = [s for s in services if selects(sel, s["metadata"]["labels"])]
        fail.check(len(matched) == 1, f"{owner}: selects {len(matched)} Services, not one")
        for s in matched:
            fail.check(s["metadata"]["namespace"] in sm["spec"]["namespaceSelector"]["matchNames"],
                       f"{owner}: namespaceSelector misses {s['metadata']['namespace']}")
            names = {p["name"] for p in s["spec"]["ports"]}
            for ep in sm["spec"]["endpoints"]:
                fail.check(ep["port"] in names, f"{owner}: endpoint port {ep['port']} is not a port of {name_of(s)}")
                fail.check(ep.get("path") == "/metrics", f"{owner}: endpoint path is not /metrics")

    for pdb in by_kind.get("PodDisruptionBudget", []):
        fail.check(selects(pdb["spec"]["selector"]["matchLabels"], pod_labels), f"{name_of(pdb)}: selects no gateway pod")
    for hpa in by_kind.get("HorizontalPodAutoscaler", []):
        ref = hpa["spec"]["scaleTargetRef"]
        fail.check(any(d["metadata"]["name"] == ref["name"] for d in deployments),
                   f"{name_of(hpa)}: scales {ref['name']}, not rendered")
        for d in deployments:
            fail.check("replicas" not in d["spec"], f"{name_of(d)}: sets replicas beside an HPA")
    for np in by_kind.get("NetworkPolicy", []):
        fail.check(selects(np["spec"]["podSelector"]["matchLabels"], pod_labels), f"{name_of(np)}: selects no gateway pod")
        for rule in np["spec"].get("ingress", []):
            for p in rule.get("ports", []):
                if isinstance(p.get("port"), str):
                    fail.check(p["port"] in containers_ports, f"{name_of(np)}: ingress port {p['port']} is no container port")

    for n in notes:
        print(f"    note: {n}")
    for f in fail.items:
        print(f"    FAIL: {f}")
    print(f"    {checked} objects valid against Kubernetes {args.kube_version} (strict), "
          f"{len(notes)} custom resources not schema-checked, {len(fail.items)} failures")
    return 1 if fail.items else 0


def drift(args):
    with open(args.defaults, "rb") as f:
        defaults = tomllib.load(f)
    with open(args.schema) as f:
        schema = json.load(f)
    cfg = schema["properties"]["config"]["properties"]
    problems = []
    for section, table in defaults.items():
        if section not in cfg:
            problems.append(f"[{section}] of config/default.toml is missing from values.schema.json config")
            continue
        props = cfg[section].get("properties", {})
        for key, value in table.items():
            if (section, key) in MANAGED:
                if key in props:
                    problems.append(f"config.{section}.{key} is managed by the chart but allowed by the schema")
                continue
            if key not in props:
                problems.append(f"config.{section}.{key} (config/default.toml) is missing from values.schema.json")
                continue
            want = {bool: "boolean", int: "integer", float: "number", str: "string", list: "array",
                    dict: "object"}[type(value)]
            got = props[key].get("type")
            if got != want:
                problems.append(f"config.{section}.{key}: schema type {got}, default.toml has {want}")
        for key in props:
            if key not in table:
                problems.append(f"config.{section}.{key} is in values.schema.json but not in config/default.toml")
    for section in cfg:
        if section not in defaults:
            problems.append(f"config.{section} is in values.schema.json but not in config/default.toml")
    # The chart's README lists every value.
    readme = open(args.schema.replace("values.schema.json", "README.md")).read()
    for key in schema["properties"]:
        if key != "global" and f"`{key}" not in readme:
            problems.append(f"value {key} is not in the chart's README.md")
    for p in problems:
        print(f"    FAIL: {p}")
    n = sum(len(t) for t in defaults.values())
    print(f"    {n} keys of config/default.toml: {len(MANAGED)} managed by the chart, the rest in the schema; "
          f"{len(problems)} differences")
    return 1 if problems else 0


def checkov_report(args):
    with open(args.report) as f:
        data = json.load(f)
    reports = data if isinstance(data, list) else [data]
    failed = 0
    skips = []
    summary = {"passed": 0, "failed": 0, "skipped": 0}
    for r in reports:
        s = r.get("summary", {})
        for k in summary:
            summary[k] += s.get(k, 0)
        for c in r.get("results", {}).get("failed_checks", []):
            failed += 1
            print(f"    FAIL: {c['check_id']} {c['check_name']} ({c['resource']})")
        for c in r.get("results", {}).get("skipped_checks", []):
            comment = c.get("check_result", {}).get("suppress_comment", "")
            resource = c["resource"].split(".")[0] + "/" + c["resource"].split(".")[2] \
                if c["resource"].count(".") >= 2 else c["resource"]
            skips.append((c["check_id"], comment, resource))
    by_check = {}
    for check_id, _, resource in sorted(set(skips)):
        by_check.setdefault(check_id, []).append(resource)
    if by_check:
        print("    skipped (reasons in the summary): " +
              "; ".join(f"{c} on {', '.join(r)}" for c, r in by_check.items()))
    if args.skips_log:
        with open(args.skips_log, "a") as f:
            for check_id, comment, _ in sorted(set(skips)):
                f.write(f"{check_id}\t{comment}\n")
    print(f"    checkov: {summary['passed']} passed, {summary['failed']} failed, {summary['skipped']} skipped")
    return 1 if failed or summary["failed"] else 0


def smoke(args):
    """Starts `interlock serve` as the rendered Deployment would (its config file and
    environment; only the control database is pointed at a closed loopback port and the
    password at a dummy file), then probes what the chart wired: /healthz 200, /readyz 503
    (no database), the metrics listener without a key, /metrics on the main port refused
    without one, the Service's names accepted by the Host guard and another name refused, a
    clean exit on SIGTERM within the grace period. Run in a network namespace of its own."""
    import os
    import signal
    import subprocess
    import shutil
    import tempfile
    import time
    import urllib.error
    import urllib.request

    docs = load_docs(args.rendered)
    dep = next(d for d in docs if d["kind"] == "Deployment")
    spec = dep["spec"]["template"]["spec"]
    c = spec["containers"][0]
    cms = {d["metadata"]["name"]: d for d in docs if d["kind"] == "ConfigMap"}
    cm = next(v["configMap"]["name"] for v in spec["volumes"] if "configMap" in v)
    text = cms[cm]["data"]["interlock.toml"]
    cfg = tomllib.loads(text)
    if any(v["name"].startswith("secret-") for v in spec["volumes"]):
        print("    serve: not started (secretFiles are mounted in the pod; their files are not here)")
        return 3
    if cfg.get("control", {}).get("migrate_on_start"):
        print("    serve: not started (migrate_on_start: without a database it stops at start, by design)")
        return 3
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    work = tempfile.mkdtemp(prefix="check-chart-serve-")
    with open(f"{work}/interlock.toml", "w") as f:
        f.write(text)
    with open(f"{work}/password", "w") as f:
        f.write("not-a-password\n")
    env = {"PATH": "/usr/bin:/bin"}
    for e in c.get("env", []):
        if "value" in e:
            env[e["name"]] = e["value"]
        elif e["name"] == "INTERLOCK__RATE_LIMIT__REDIS_URL":
            env[e["name"]] = "redis://127.0.0.1:1/0"
        else:
            env[e["name"]] = "from-a-secret"
    env.update({
        "INTERLOCK_CONFIG": f"{work}/interlock.toml",
        "INTERLOCK__CONTROL__HOST": "127.0.0.1",
        "INTERLOCK__CONTROL__PORT": "1",
        "INTERLOCK__CONTROL__PASSWORD_FILE": f"{work}/password",
    })
    fail = Failures()
    log = open(f"{work}/serve.log", "w+")
    proc = subprocess.Popen([args.bin, "serve"], env=env, stdout=log, stderr=subprocess.STDOUT)

    def get(port, path, host=None, data=None):
        req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data)
        if host:
            req.add_header("Host", host)
        if data is not None:
            req.add_header("Content-Type", "application/json")
            req.add_header("Accept", "application/json, text/event-stream")
        try:
            with urllib.request.urlopen(req, timeout=5) as r:
                return r.status, r.read().decode(errors="replace")
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode(errors="replace")

    try:
        for _ in range(100):
            try:
                if get(ports["http"], "/healthz")[0] == 200:
                    break
            except OSError:
                pass
            if proc.poll() is not None:
                break
            time.sleep(0.1)
        else:
            fail.add("serve: /healthz never answered")
        if proc.poll() is not None:
            log.seek(0)
            fail.add(f"serve exited at start: {log.read()[-400:]}")
        else:
            status, body = get(ports["http"], "/readyz")
            fail.check(status == 503 and "control database" in body, f"/readyz without a database: {status} {body[:200]}")
            if "metrics" in ports:
                fail.check(get(ports["metrics"], "/metrics")[0] == 200, "metrics listener: /metrics without a key is not 200")
                fail.check(get(ports["metrics"], "/healthz")[0] == 404, "metrics listener: other paths are not 404")
            fail.check(get(ports["http"], "/metrics")[0] == 401, "main port: /metrics without a key is not 401")
            ping = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
            for host in cfg["server"]["allowed_hosts"]:
                status, body = get(ports["http"], "/mcp", host=f"{host}:{ports['http']}", data=ping)
                fail.check(status == 200, f"Host {host}: /mcp ping answered {status} {body[:120]}")
            status, _ = get(ports["http"], "/mcp", host="rebound.example", data=ping)
            fail.check(status == 403, f"Host rebound.example: /mcp answered {status}, not 403")
            grace = spec.get("terminationGracePeriodSeconds", 30)
            t0 = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            try:
                code = proc.wait(timeout=grace)
                took = time.monotonic() - t0
                fail.check(code == 0, f"serve exited {code} on SIGTERM")
                print(f"    serve: probes, metrics listener and Host guard as wired; SIGTERM -> exit {code} in {took:.1f} s")
            except subprocess.TimeoutExpired:
                fail.add(f"serve still running {grace} s after SIGTERM")
        log.seek(0)
        lines = [l for l in log.read().splitlines() if l.strip()]
        fmt = cfg.get("log", {}).get("format")
        if fmt == "json":
            bad = [l for l in lines if not l.startswith("{")]
            fail.check(not bad, f"log.format json, but a line is not JSON: {bad[:1]}")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        log.close()
        shutil.rmtree(work, ignore_errors=True)
    for f in fail.items:
        print(f"    FAIL: {f}")
    return 1 if fail.items else 0


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    v = sub.add_parser("validate")
    v.add_argument("rendered")
    v.add_argument("--kube-version", required=True)
    v.add_argument("--defaults", required=True)
    d = sub.add_parser("drift")
    d.add_argument("schema")
    d.add_argument("--defaults", required=True)
    sm = sub.add_parser("smoke")
    sm.add_argument("rendered")
    sm.add_argument("--bin", required=True)
    c = sub.add_parser("checkov-report")
    c.add_argument("report")
    c.add_argument("--skips-log", help="append each skipped check and its reason to this file")
    args = p.parse_args()
    return {"validate": validate, "drift": drift, "smoke": smoke,
            "checkov-report": checkov_report}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
