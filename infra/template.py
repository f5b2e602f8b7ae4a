"""template.yaml loading and SAM translation live in queue_autoscale.demo.template; the names
are kept here for the scripts and tests that import them from infra/."""

from queue_autoscale.demo.template import (
    DEFAULT_REGION,
    PLACEHOLDER_CODE_URI,
    ROOT,
    TEMPLATE_PATH,
    expand_for_each,
    function_environment,
    is_condition_true,
    load_template,
    translate,
)

__all__ = [
    "DEFAULT_REGION",
    "PLACEHOLDER_CODE_URI",
    "ROOT",
    "TEMPLATE_PATH",
    "expand_for_each",
    "function_environment",
    "is_condition_true",
    "load_template",
    "translate",
]
