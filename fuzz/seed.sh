#!/usr/bin/env bash
# Seed the fuzz corpora (fuzz/corpus/<target>/, not committed) from the repository's own files:
# policy_text from docs/policy.md's TOML blocks, the harness's own policies and every
# experiments/**/*.toml; scenario_text from experiments/**/*.toml, benches/*.toml and
# docs/scenario.md's TOML blocks; the frame targets from a few deterministic random inputs.
set -euo pipefail
cd "$(dirname "$0")"
root=..
mkdir -p corpus/{gateway_frames,tap_frames,policy_text,scenario_text}
python3 - "$root" <<'PY'
import glob, os, random, re, sys
root = sys.argv[1]
def blocks(md):
    return re.findall(r"```toml\n(.*?)```", open(md).read(), re.S)
def put(target, name, text):
    path = os.path.join("corpus", target, name)
    with open(path, "wb") as f:
        f.write(text.encode() if isinstance(text, str) else text)
n = 0
for i, b in enumerate(blocks(f"{root}/docs/policy.md")):
    put("policy_text", f"docs-policy-{i}.toml", b); n += 1
for i, b in enumerate(re.findall(r'r#"(.*?)"#', open("src/policies.rs").read(), re.S)):
    put("policy_text", f"harness-{i}.toml", b); n += 1
for i, b in enumerate(blocks(f"{root}/docs/scenario.md")):
    put("scenario_text", f"docs-scenario-{i}.toml", b)
for p in sorted(glob.glob(f"{root}/experiments/**/*.toml", recursive=True)) + sorted(glob.glob(f"{root}/benches/*.toml")):
    name = os.path.relpath(p, root).replace("/", "_")
    text = open(p).read()
    put("scenario_text", name, text)
    put("policy_text", name, text)
rng = random.Random(1)
for t in ("gateway_frames", "tap_frames"):
    for i in range(16):
        put(t, f"random-{i}", bytes(rng.randrange(256) for _ in range(rng.choice([64, 256, 1024, 4096]))))
print("seeded", {t: len(os.listdir(os.path.join("corpus", t))) for t in os.listdir("corpus")})
PY
