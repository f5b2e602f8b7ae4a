"""AWS adapters: the only modules that import boto3/botocore.

Each takes its client in the constructor, pairs one AWS call with a pure parser and
raises the project's errors from `errors.py`.
"""
