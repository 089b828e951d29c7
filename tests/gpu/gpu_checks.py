#!/usr/bin/env python3
"""Helpers of tests/gpu/run.sh: parse hetrun/cuobjdump output, write and validate the summary.

  gpu_checks.py compare INSPECT_JSON CUOBJDUMP_TXT     key=value lines: image sets, agreement
  gpu_checks.py verdict CHECK_JSON TARGET              key=value lines: verdict, driver load
  gpu_checks.py summary RESULTS_TSV OUT_JSON META...   the JSON summary (META is key=value)
  gpu_checks.py validate SUMMARY_JSON [--dry-run]      exit 1 with a message when malformed
"""
import json
import re
import sys

# The steps run.sh records, in order; validate() requires each once.
STEPS = ["tools", "build", "arch_images", "fixture_launch", "memory", "nccl", "buckets", "trainer",
         "fsdp2", "collective_check", "deepspeed"]


def images_of_inspect(path):
    with open(path) as f:
        files = json.load(f)
    sass, ptx = set(), set()
    for item in files:
        if "error" in item:
            raise SystemExit(f"hetrun inspect: {item['file']}: {item['error']}")
        for image in item.get("images", []):
            (sass if image["kind"] == "sass" else ptx).add(image["arch"])
    return sass, ptx


def images_of_cuobjdump(path):
    # "ELF file    1: name.1.sm_80.cubin" / "PTX file    1: name.1.sm_90.ptx"
    sass, ptx = set(), set()
    with open(path, errors="replace") as f:
        for line in f:
            m = re.match(r"\s*(ELF|PTX) file\s+\d+:\s*(\S+)", line)
            if not m:
                continue
            arches = re.findall(r"sm_(\d+[af]?)", m.group(2))
            if not arches:
                continue
            if m.group(1) == "ELF":
                sass.add("sm_" + arches[-1])
            else:
                ptx.add("compute_" + arches[-1])
    return sass, ptx


def runs_on(sass, ptx, target):
    """(SASS fits, PTX fits) for a compute capability like '9.0' (cuda_facts.md section 1)."""
    major, minor = (int(x) for x in target.split("."))
    sm = 10 * major + minor
    sass_ok = ptx_ok = False
    for arch in sass:
        m = re.fullmatch(r"sm_(\d+)([af]?)", arch)
        if not m:
            continue
        n, suffix = int(m.group(1)), m.group(2)
        if suffix == "a":
            sass_ok |= n == sm
        else:
            sass_ok |= n // 10 == major and n % 10 <= minor
    for arch in ptx:
        m = re.fullmatch(r"compute_(\d+)([af]?)", arch)
        if not m:
            continue
        n, suffix = int(m.group(1)), m.group(2)
        if suffix == "a":
            ptx_ok |= n == sm
        elif suffix == "f":
            ptx_ok |= n // 10 == major and n <= sm
        else:
            ptx_ok |= n <= sm
    return sass_ok, ptx_ok


def compare(inspect_json, cuobjdump_txt):
    isass, iptx = images_of_inspect(inspect_json)
    csass, cptx = images_of_cuobjdump(cuobjdump_txt)
    sass_ok, ptx_ok = runs_on(csass, cptx, "9.0")
    print("inspect_sass=" + ",".join(sorted(isass)))
    print("inspect_ptx=" + ",".join(sorted(iptx)))
    print("cuobjdump_sass=" + ",".join(sorted(csass)))
    print("cuobjdump_ptx=" + ",".join(sorted(cptx)))
    print(f"cuobjdump_sass_9_0={int(sass_ok)}")
    print(f"cuobjdump_ptx_9_0={int(ptx_ok)}")
    print(f"images_agree={int(isass == csass and iptx == cptx)}")


def verdict(check_json, target):
    with open(check_json) as f:
        report = json.load(f)
    files = report.get("files", [])
    if len(files) != 1:
        raise SystemExit(f"hetrun check --json: expected one file, got {len(files)}")
    print("verdict=" + files[0].get("verdicts", {}).get(target, "none"))
    loads = report.get("driver_load")
    if isinstance(loads, list):
        for key in ("loaded", "no_binary", "other_errors", "expected"):
            print(f"driver_{key}=" + str(sum(item.get(key, 0) for item in loads)))
        first = next((item["first_error"] for item in loads if item.get("first_error")), "")
        print("driver_first_error=" + first)
    else:
        print("driver_load=" + str(loads))


def value_of(text):
    if text in ("true", "false"):
        return text == "true"
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    if re.fullmatch(r"-?(\d+\.\d*|\.\d+|\d+)([eE][-+]?\d+)?", text):
        return float(text)
    return text


def summary(results_tsv, out_json, meta):
    steps, order = {}, []
    with open(results_tsv) as f:
        for line in f:
            fields = line.rstrip("\n").split("\t")
            if fields[0] == "S" and len(fields) == 5:
                _, name, status, seconds, detail = fields
                if name not in steps:
                    order.append(name)
                    steps[name] = {"name": name, "figures": {}}
                steps[name].update(status=status, seconds=value_of(seconds), detail=detail)
            elif fields[0] == "F" and len(fields) == 4:
                _, name, key, value = fields
                if name not in steps:
                    order.append(name)
                    steps[name] = {"name": name, "status": "fail", "seconds": 0,
                                   "detail": "no result recorded", "figures": {}}
                steps[name]["figures"][key] = value_of(value)
    doc = {k: value_of(v) for k, v in (m.split("=", 1) for m in meta)}
    doc["steps"] = [steps[n] for n in order]
    doc["ok"] = all(s.get("status") != "fail" for s in doc["steps"])
    doc["failed"] = [s["name"] for s in doc["steps"] if s.get("status") == "fail"]
    with open(out_json, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    print(f"{'STEP':<16} {'STATUS':<26} {'SECONDS':>7}  DETAIL")
    for s in doc["steps"]:
        print(f"{s['name']:<16} {s.get('status', ''):<26} {s.get('seconds', 0):>7}  {s.get('detail', '')}")
        for key, value in s["figures"].items():
            print(f"{'':<16}   {key} = {value}")
    print("RESULT: " + ("all checks passed" if doc["ok"] else "FAILED: " + ", ".join(doc["failed"])))


def validate(path, dry_run):
    with open(path) as f:
        doc = json.load(f)
    problems = []
    for key in ("suite", "dry_run", "ok", "steps", "failed", "budget_s", "duration_s"):
        if key not in doc:
            problems.append(f"missing key '{key}'")
    names = [s.get("name") for s in doc.get("steps", [])]
    if names != STEPS:
        problems.append(f"steps {names}, expected {STEPS}")
    for step in doc.get("steps", []):
        status = step.get("status", "")
        if not re.fullmatch(r"pass|fail|skipped \(.+\)", status):
            problems.append(f"step {step.get('name')}: bad status '{status}'")
        if not isinstance(step.get("figures"), dict) or not isinstance(step.get("seconds"), (int, float)):
            problems.append(f"step {step.get('name')}: figures/seconds malformed")
        if dry_run and step.get("name") in ("fixture_launch", "memory", "nccl", "buckets", "trainer",
                                            "fsdp2", "collective_check", "deepspeed") \
                and status != "skipped (dry run)":
            problems.append(f"dry run: GPU step {step.get('name')} is '{status}'")
    if dry_run and doc.get("dry_run") is not True:
        problems.append("dry_run is not true")
    if problems:
        print(f"{path}: " + "; ".join(problems), file=sys.stderr)
        sys.exit(1)
    print(f"{path}: {len(names)} steps, ok={doc['ok']}")


def main(argv):
    if len(argv) >= 3 and argv[0] == "compare":
        compare(argv[1], argv[2])
    elif len(argv) == 3 and argv[0] == "verdict":
        verdict(argv[1], argv[2])
    elif len(argv) >= 3 and argv[0] == "summary":
        summary(argv[1], argv[2], argv[3:])
    elif len(argv) in (2, 3) and argv[0] == "validate":
        validate(argv[1], argv[2:] == ["--dry-run"])
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(64)


if __name__ == "__main__":
    main(sys.argv[1:])
