"""The project's own AWS errors: adapters raise these, never botocore's.

`translate` maps a botocore/ClientError to one of them by error code and HTTP status, so
handlers decide what to do (retry the record, hold the queue, back off) without parsing
AWS error codes themselves. There is no `retryable` flag: botocore's standard retry mode
already retries throttling and 5xx answers inside the call (adapters/clients.py), and every
caller answers any failure the same way, whatever its kind: the queue holds this tick and is
read again at the next, a record is reported failed and SQS redelivers it. The class says
what happened, for the logs.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from boto3.exceptions import S3UploadFailedError
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectionError,
    ConnectTimeoutError,
    EndpointConnectionError,
    NoRegionError,
    ParamValidationError,
    ReadTimeoutError,
)

UNTRANSLATED: tuple[type[Exception], ...] = (BotoCoreError, ClientError)
"""botocore's errors, for the one place that catches what no adapter call translated: the
command line's last resort (queue_autoscale/cli.py, `untranslated_line`)."""


class AdapterError(Exception):
    """An AWS call failed; `operation`, `code` and `resource` say which and why."""

    def __init__(
        self, operation: str, message: str, *, code: str = "", resource: str | None = None
    ) -> None:
        self.operation = operation
        self.code = code
        self.resource = resource
        where = f" on {resource}" if resource else ""
        tag = f" ({code})" if code else ""
        super().__init__(f"{operation}{where} failed{tag}: {message}")


class Throttled(AdapterError):  # noqa: N818 - names read as outcomes
    """AWS throttled the call even after botocore's retries."""


class ServiceUnavailable(AdapterError):  # noqa: N818 - names read as outcomes
    """A 5xx answer, a timeout or a connection error."""


class AccessDenied(AdapterError):  # noqa: N818 - names read as outcomes
    """The caller's role lacks a permission or its credentials are invalid."""


class NotFound(AdapterError):  # noqa: N818 - names read as outcomes
    """The queue, table, bucket, cluster or service does not exist."""


class InvalidRequest(AdapterError):  # noqa: N818 - names read as outcomes
    """AWS rejected the request's parameters (a bug or a bad config, not transient)."""


class MalformedResponse(AdapterError):  # noqa: N818 - names read as outcomes
    """AWS answered but an attribute the parser needs is missing or not a number."""


class StaleReading(AdapterError):  # noqa: N818 - names read as outcomes
    """The newest datapoint is older than the source allows: the queue holds."""


class StateConflict(AdapterError):  # noqa: N818 - names read as outcomes
    """The controller-state write lost an optimistic-concurrency race (version changed)."""


_THROTTLE_CODES = frozenset(
    {
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "RequestThrottled",
        "RequestThrottledException",
        "TooManyRequestsException",
        "RequestLimitExceeded",
        "ProvisionedThroughputExceededException",
        "RequestLimitExceededException",
        "SlowDown",
        "LimitExceededException",
        "AWS.SimpleQueueService.RequestThrottled",
    }
)
_ACCESS_CODES = frozenset(
    {
        "AccessDenied",
        "AccessDeniedException",
        "UnauthorizedOperation",
        "UnrecognizedClientException",
        "InvalidClientTokenId",
        "ExpiredToken",
        "ExpiredTokenException",
        "SignatureDoesNotMatch",
        "AuthFailure",
        "KMS.AccessDeniedException",
    }
)
_NOT_FOUND_CODES = frozenset(
    {
        "ResourceNotFoundException",
        "AWS.SimpleQueueService.NonExistentQueue",
        "QueueDoesNotExist",
        "NonExistentQueue",
        "NoSuchBucket",
        "NoSuchKey",
        "ClusterNotFoundException",
        "ServiceNotFoundException",
        "ServiceNotActiveException",
    }
)
_SERVER_CODES = frozenset(
    {
        "InternalError",
        "InternalFailure",
        "InternalServerError",
        "ServiceUnavailable",
        "ServerException",
    }
)


def translate(error: Exception, operation: str, resource: str | None = None) -> AdapterError:
    """The project error for a botocore exception raised by `operation` on `resource`."""
    if isinstance(error, S3UploadFailedError) and isinstance(error.__context__, ClientError):
        error = error.__context__  # upload_file re-raises PutObject's ClientError without its code
    if isinstance(error, AdapterError):
        return error
    if isinstance(error, ClientError):
        info = error.response.get("Error", {})
        code = str(info.get("Code", ""))
        message = str(info.get("Message", "")) or str(error)
        status = int(error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
        kind: type[AdapterError]
        if code in _THROTTLE_CODES or status == 429:
            kind = Throttled
        elif code in _ACCESS_CODES or status == 403:
            kind = AccessDenied
        elif code in _NOT_FOUND_CODES or status == 404:  # a HEAD's 404 has no code but "404"
            kind = NotFound
        elif code in _SERVER_CODES or status >= 500:
            kind = ServiceUnavailable
        else:
            kind = InvalidRequest
        return kind(operation, message, code=code, resource=resource)
    if isinstance(
        error, ConnectTimeoutError | ReadTimeoutError | EndpointConnectionError | ConnectionError
    ):
        return ServiceUnavailable(
            operation, str(error), code=type(error).__name__, resource=resource
        )
    if isinstance(error, ParamValidationError):
        return InvalidRequest(operation, str(error), code="ParamValidation", resource=resource)
    if isinstance(error, BotoCoreError):
        return ServiceUnavailable(
            operation, str(error), code=type(error).__name__, resource=resource
        )
    return AdapterError(operation, str(error), code=type(error).__name__, resource=resource)


@contextmanager
def aws_call(operation: str, resource: str | None = None) -> Iterator[None]:
    """Run one AWS call; botocore errors leave as the project's errors."""
    try:
        yield
    except (ClientError, BotoCoreError, S3UploadFailedError) as error:
        raise translate(error, operation, resource) from error


def untranslated_line(error: Exception) -> str:
    """One line for a botocore error no adapter call translated (`UNTRANSLATED`): what to set
    when no region is configured (boto3 reads AWS_DEFAULT_REGION, not AWS_REGION, outside
    Lambda), else the error's class and message."""
    if isinstance(error, NoRegionError):
        return "no AWS region: set AWS_DEFAULT_REGION (or a region in the AWS_PROFILE's config)"
    return f"{type(error).__name__}: {error}"
