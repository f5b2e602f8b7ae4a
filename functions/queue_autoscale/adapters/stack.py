"""A deployed stack's controller configuration: the evaluate function's environment.

`queue-autoscale status --stack NAME` reads what the controller itself runs with: the
function CloudFormation created as `EvaluateFunction`, and its environment variables (the
queue config, the load table, the archive bucket, the interval), so there is no second copy
of the configuration to drift.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from queue_autoscale.adapters.errors import MalformedResponse, aws_call

EVALUATE_LOGICAL_ID = "EvaluateFunction"


def parse_environment(configuration: Mapping[str, Any], function: str) -> dict[str, str]:
    """The environment variables of a GetFunctionConfiguration answer."""
    variables = configuration.get("Environment", {}).get("Variables")
    if not isinstance(variables, Mapping):
        raise MalformedResponse(
            "GetFunctionConfiguration", "no environment variables", resource=function
        )
    return {str(key): str(value) for key, value in variables.items()}


class StackReader:
    """Finds a stack's evaluate function and reads its environment."""

    def __init__(self, cloudformation: Any, lambda_client: Any) -> None:
        self._cloudformation = cloudformation
        self._lambda = lambda_client

    def physical_id(self, stack_name: str, logical_id: str) -> str:
        """The physical id of one resource of the stack."""
        with aws_call("DescribeStackResource", f"{stack_name}/{logical_id}"):
            answer = self._cloudformation.describe_stack_resource(
                StackName=stack_name, LogicalResourceId=logical_id
            )
        physical = answer.get("StackResourceDetail", {}).get("PhysicalResourceId")
        if not isinstance(physical, str) or not physical:
            raise MalformedResponse(
                "DescribeStackResource", "no physical id", resource=f"{stack_name}/{logical_id}"
            )
        return physical

    def evaluate_environment(self, stack_name: str) -> dict[str, str]:
        """The evaluate function's environment variables."""
        function = self.physical_id(stack_name, EVALUATE_LOGICAL_ID)
        with aws_call("GetFunctionConfiguration", function):
            configuration = self._lambda.get_function_configuration(FunctionName=function)
        return parse_environment(configuration, function)


def parse_outputs(answer: Mapping[str, Any], stack_name: str) -> dict[str, str]:
    """OutputKey -> OutputValue of a DescribeStacks answer for one stack."""
    stacks = answer.get("Stacks")
    if not isinstance(stacks, list) or not stacks or not isinstance(stacks[0], Mapping):
        raise MalformedResponse("DescribeStacks", "no stack in the answer", resource=stack_name)
    outputs = stacks[0].get("Outputs", [])
    return {
        str(item["OutputKey"]): str(item.get("OutputValue", ""))
        for item in outputs
        if isinstance(item, Mapping) and "OutputKey" in item
    }


def stack_outputs(cloudformation: Any, stack_name: str) -> dict[str, str]:
    """A deployed stack's outputs (ArchiveBucketName, EventsQueueUrl, ...)."""
    with aws_call("DescribeStacks", stack_name):
        answer = cloudformation.describe_stacks(StackName=stack_name)
    return parse_outputs(answer, stack_name)
