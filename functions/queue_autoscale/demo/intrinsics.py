"""CloudFormation's intrinsic functions, resolved against the stack created on the emulator."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from queue_autoscale.demo.direct import EmulatorError, queue_attribute


class Resolver:
    """Resolves Ref / Fn::GetAtt / Fn::Sub / Fn::If / Fn::Join ... against the created stack."""

    def __init__(
        self,
        client: Callable[[str], Any],
        template: Mapping[str, Any],
        parameters: Mapping[str, str],
        physical: dict[str, str],
        stack_name: str,
        region: str,
    ) -> None:
        self._client = client
        self._template = template
        self._physical = physical
        account = client("sts").get_caller_identity()["Account"]
        self._values: dict[str, Any] = {
            "AWS::Region": region,
            "AWS::AccountId": account,
            "AWS::Partition": "aws",
            "AWS::StackName": stack_name,
            "AWS::URLSuffix": "amazonaws.com",
        }
        for name, spec in template.get("Parameters", {}).items():
            value = parameters.get(name, spec.get("Default"))
            if spec.get("Type") == "CommaDelimitedList" and isinstance(value, str):
                value = value.split(",") if value else []
            self._values[name] = value
        self._bodies: dict[str, Any] = dict(template.get("Conditions", {}))
        self._conditions: dict[str, bool] = {}
        for name in self._bodies:
            self._condition(name)

    def _condition(self, name: str) -> bool:
        """A condition's value, evaluated once (one condition may name another, `Condition`)."""
        if name not in self._conditions:
            if name not in self._bodies:
                raise EmulatorError(f"Condition {name}: not in the template's Conditions")
            self._conditions[name] = bool(self.resolve(self._bodies[name]))
        return self._conditions[name]

    @property
    def conditions(self) -> dict[str, bool]:
        """Every condition of the template, evaluated with the stack's parameters."""
        return dict(self._conditions)

    def environments(self, absent: set[str]) -> dict[str, dict[str, str]]:
        """Each function's Environment.Variables by logical id, as Lambda holds them (strings):
        Globals merged in by the translation, AWS::NoValue dropped, a Ref to an `absent`
        resource "" (`unreferenced`, as in the stack's own copy)."""
        found: dict[str, dict[str, str]] = {}
        for logical_id, resource in self._template["Resources"].items():
            if resource["Type"] == "AWS::Lambda::Function":
                variables = resource["Properties"].get("Environment", {}).get("Variables", {})
                resolved = self.resolve(unreferenced(variables, absent))
                found[logical_id] = {name: str(value) for name, value in resolved.items()}
        return found

    def resolve(self, value: Any) -> Any:
        """The value with every intrinsic function replaced (AWS::NoValue entries dropped)."""
        if isinstance(value, list):
            return [item for item in (self.resolve(v) for v in value) if item is not _NO_VALUE]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            ((key, argument),) = value.items()
            handler = self._functions().get(key)
            if handler is not None:
                return handler(argument)
        resolved = {k: self.resolve(v) for k, v in value.items()}
        return {k: v for k, v in resolved.items() if v is not _NO_VALUE}

    def _functions(self) -> dict[str, Callable[[Any], Any]]:
        return {
            "Ref": self._ref,
            "Fn::GetAtt": self._get_att,
            "Fn::Sub": self._sub,
            "Fn::Join": lambda a: self.resolve(a[0]).join(str(v) for v in self.resolve(a[1])),
            "Fn::Split": lambda a: self.resolve(a[1]).split(self.resolve(a[0])),
            "Fn::Select": lambda a: self.resolve(a[1])[int(self.resolve(a[0]))],
            "Fn::If": lambda a: self.resolve(a[1] if self._condition(a[0]) else a[2]),
            "Fn::Equals": lambda a: self.resolve(a[0]) == self.resolve(a[1]),
            "Fn::Not": lambda a: not self.resolve(a[0]),
            "Fn::And": lambda a: all(self.resolve(v) for v in a),
            "Fn::Or": lambda a: any(self.resolve(v) for v in a),
            "Condition": self._condition,
        }

    def _ref(self, name: str) -> Any:
        if name == "AWS::NoValue":
            return _NO_VALUE
        if name in self._values:
            return self._values[name]
        if name in self._physical:
            return self._physical[name]
        raise EmulatorError(f"Ref {name}: neither a parameter nor a created resource")

    def _get_att(self, argument: Any) -> str:  # noqa: PLR0911 (one return per type and attribute)
        name, attribute = argument if isinstance(argument, list) else argument.split(".", 1)
        kind = self._template["Resources"][name]["Type"]
        physical = self._ref(name)
        if kind == "AWS::SQS::Queue":
            sqs = self._client("sqs")
            if attribute == "Arn":
                return queue_attribute(sqs, physical, "QueueArn")
            if attribute == "QueueName":
                return str(physical).rstrip("/").rsplit("/", 1)[-1]
            if attribute == "QueueUrl":
                return str(physical)
        if kind == "AWS::S3::Bucket" and attribute == "Arn":
            return f"arn:aws:s3:::{physical}"
        if kind == "AWS::DynamoDB::Table" and attribute == "Arn":
            return str(
                self._client("dynamodb").describe_table(TableName=physical)["Table"]["TableArn"]
            )
        if kind == "AWS::IAM::Role" and attribute == "Arn":
            return str(self._client("iam").get_role(RoleName=physical)["Role"]["Arn"])
        if kind == "AWS::Lambda::Function" and attribute == "Arn":
            return str(
                self._client("lambda").get_function(FunctionName=physical)["Configuration"][
                    "FunctionArn"
                ]
            )
        if kind == "AWS::Logs::LogGroup" and attribute == "Arn":
            region, account = self._values["AWS::Region"], self._values["AWS::AccountId"]
            return f"arn:aws:logs:{region}:{account}:log-group:{physical}:*"
        raise EmulatorError(f"Fn::GetAtt {name}.{attribute} ({kind}) is not emulated")

    def _sub(self, argument: Any) -> str:
        text, variables = (
            (argument, {}) if isinstance(argument, str) else (argument[0], argument[1])
        )
        local = {key: self.resolve(value) for key, value in variables.items()}
        out, position = [], 0
        while True:
            start = text.find("${", position)
            if start < 0:
                out.append(text[position:])
                return "".join(out)
            end = text.index("}", start)
            out.append(text[position:start])
            name = text[start + 2 : end]
            if name.startswith("!"):
                out.append("${" + name[1:] + "}")
            elif name in local:
                out.append(str(local[name]))
            elif "." in name:
                out.append(self._get_att(name))
            else:
                out.append(str(self._ref(name)))
            position = end + 1


def unreferenced(value: Any, absent: set[str]) -> Any:
    """`value` with each Ref to an absent resource made "" (a function's stream variable left
    empty: it writes the bucket itself) and each GetAtt of one a placeholder naming it."""
    if isinstance(value, list):
        return [unreferenced(item, absent) for item in value]
    if not isinstance(value, dict):
        return value
    if set(value) == {"Ref"} and value["Ref"] in absent:
        return ""
    if set(value) == {"Fn::GetAtt"} and value["Fn::GetAtt"][0] in absent:
        return f"arn:aws:emulator:::not-created/{value['Fn::GetAtt'][0]}"
    return {key: unreferenced(item, absent) for key, item in value.items()}


class _NoValue:
    def __repr__(self) -> str:
        return "AWS::NoValue"


_NO_VALUE = _NoValue()
