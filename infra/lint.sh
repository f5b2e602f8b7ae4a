#!/usr/bin/env bash
# Lint the infrastructure: dashboard copy in sync, cfn-lint, `sam validate --lint`,
# `sam build` (no containers) and checkov. Usage: bash infra/lint.sh [--no-build]
set -euo pipefail
cd "$(dirname "$0")/.."

CHECKOV_VERSION=3.3.30
UV=.tools/bin/uv
PY=.venv/bin/python

export AWS_DEFAULT_REGION="${AWS_DEFAULT_REGION:-us-east-1}"
export SAM_CLI_TELEMETRY=0
# checkov: no calls home for guidelines or the platform; runs fully local.
export BC_SKIP_MAPPING=TRUE CHECKOV_RUN_SCA_PACKAGE_SCAN_V2=false

[ -x "$UV" ] || make --no-print-directory "$UV"
[ -x "$PY" ] || make --no-print-directory setup
# one pin for the SAM CLI, shared with `queue-autoscale deploy`
SAM_CLI_VERSION="$("$PY" -c 'from queue_autoscale.operator.deploy import SAM_CLI_VERSION as v; print(v)')"

step() { printf '\n== %s\n' "$*"; }

step "dashboard body in template.yaml matches infra/dashboard.json"
"$PY" infra/sync_dashboard.py --check

step "cfn-lint template.yaml"
.venv/bin/cfn-lint template.yaml

step "sam validate --lint (aws-sam-cli $SAM_CLI_VERSION)"
"$UV" tool run --from "aws-sam-cli==$SAM_CLI_VERSION" sam validate --lint --template-file template.yaml

if [ "${1:-}" != "--no-build" ]; then
    step "sam build (no container; python3.13)"
    # The functions' runtime is python3.13: sam build needs that interpreter on the PATH.
    PY313="$(bash infra/python313.sh)"
    PATH="$(dirname "$PY313"):$PATH" "$UV" tool run --from "aws-sam-cli==$SAM_CLI_VERSION" \
        sam build --template-file template.yaml --build-dir .aws-sam/build --cached --parallel
fi

step "checkov -f template.yaml (checkov $CHECKOV_VERSION; skips are justified in the template)"
"$UV" tool run --from "checkov==$CHECKOV_VERSION" checkov -f template.yaml --framework cloudformation \
    --compact --quiet --skip-download

step "examples/worker/template.yaml: cfn-lint, sam validate --lint, checkov"; .venv/bin/cfn-lint examples/worker/template.yaml && "$UV" tool run --from "aws-sam-cli==$SAM_CLI_VERSION" sam validate --lint --template-file examples/worker/template.yaml && "$UV" tool run --from "checkov==$CHECKOV_VERSION" checkov -f examples/worker/template.yaml --framework cloudformation --compact --quiet --skip-download

step "infra lint passed"
