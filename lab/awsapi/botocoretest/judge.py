"""The botocore judge: calls the lab's AWS API with botocore and holds
every answer to botocore's own service model (the newest on this machine).

Input (stdin, JSON): endpoint, region, access_key, secret_key and cases,
each {name, service, op, params, expect ("ok" or an error code), status
(optional HTTP status), save (optional {var: [path...]})}. A string param
"$var" is replaced by a value saved by an earlier case.

Output (stdout, JSON): {botocore, cases: [{name, problems: [...]}]}.

For each answer: the raw XML is walked against the operation's output
shape (every element a member of its shape: no unknown element; scalars
parse as their type; enum values within the shape's enum), then the
answer botocore's parser made of it is walked again (required members
present, Python types right, enums). An error's code must be one the
service documents: for EC2 the error codes page (EC2's model lists no
errors), for ELB, ELBv2 and STS the operation's errors in the model and
the query API's common errors.
"""
import datetime
import json
import sys
import xml.etree.ElementTree as ET

import botocore
import botocore.config
import botocore.session
from botocore.exceptions import ClientError

# https://docs.aws.amazon.com/AWSEC2/latest/APIReference/errors-overview.html
# (common client error codes, client error codes for specific actions that
# the lab's EC2 actions can meet, server error codes).
EC2_ERRORS = {
    # common client errors
    "AuthFailure", "Blocked", "DryRunOperation", "IdempotentParameterMismatch",
    "IncompleteSignature", "InvalidAction", "InvalidCharacter", "InvalidClientTokenId",
    "InvalidPaginationToken", "InvalidParameter", "InvalidParameterCombination",
    "InvalidParameterDependency", "InvalidParameterValue", "InvalidQueryParameter",
    "MalformedQueryString", "MissingAction", "MissingAuthenticationToken",
    "MissingParameter", "OptInRequired", "PendingVerification", "RequestExpired",
    "UnauthorizedOperation", "UnknownParameter", "UnsupportedOperation",
    "SignatureDoesNotMatch",
    # specific actions'
    "DependencyViolation", "IncorrectInstanceState", "IncorrectState",
    "InvalidGroup.Duplicate", "InvalidGroup.NotFound", "InvalidGroupId.Malformed",
    "InvalidID", "InvalidInstanceID.Malformed", "InvalidInstanceID.NotFound",
    "InvalidNetworkInterfaceID.NotFound", "InvalidPermission.Duplicate",
    "InvalidPermission.NotFound", "InvalidRoute.NotFound", "InvalidRouteTableID.NotFound",
    "InvalidSubnetID.NotFound", "InvalidVpcID.NotFound", "RouteAlreadyExists",
    "InvalidFilter", "InvalidNextToken",
    # server errors
    "InternalError", "RequestLimitExceeded", "ServerInternal", "Unavailable",
}

# The query API's common errors (e.g.
# https://docs.aws.amazon.com/elasticloadbalancing/2012-06-01/APIReference/CommonErrors.html),
# with AccessDenied and Throttling, the codes ELB sends for a denial and a
# throttle (the SDKs' retryers match "Throttling").
QUERY_COMMON_ERRORS = {
    "AccessDenied", "AccessDeniedException", "IncompleteSignature", "InternalFailure",
    "InvalidAction", "InvalidClientTokenId", "InvalidParameterCombination",
    "InvalidParameterValue", "InvalidQueryParameter", "MalformedQueryString",
    "MissingAction", "MissingAuthenticationToken", "MissingParameter", "NotAuthorized",
    "OptInRequired", "RequestExpired", "ServiceUnavailable", "Throttling",
    "ThrottlingException", "ValidationError", "SignatureDoesNotMatch",
}


def local(tag):
    return tag.split("}", 1)[-1]


def member_key(shape, name):
    """The XML element name of member name of shape, as botocore's
    BaseXMLResponseParser._member_key_name computes it."""
    if shape.type_name == "list" and shape.serialization.get("flattened"):
        n = shape.member.serialization.get("name")
        if n is not None:
            return n
    return shape.serialization.get("name", name)


def check_scalar_text(shape, text, path, problems):
    t = shape.type_name
    text = text or ""
    if t == "string":
        if shape.enum and text not in shape.enum:
            problems.append(f"{path}: {text!r} is not one of {shape.name}'s values")
    elif t in ("integer", "long"):
        try:
            int(text)
        except ValueError:
            problems.append(f"{path}: {text!r} is not an {t}")
    elif t in ("float", "double"):
        try:
            float(text)
        except ValueError:
            problems.append(f"{path}: {text!r} is not a {t}")
    elif t == "boolean":
        if text not in ("true", "false"):
            problems.append(f"{path}: {text!r} is not a boolean")
    elif t == "timestamp":
        try:
            datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            problems.append(f"{path}: {text!r} is not a timestamp")


def walk_xml(elem, shape, path, problems):
    t = shape.type_name
    if t == "structure":
        keys = {}
        for name, m in shape.members.items():
            keys[member_key(m, name)] = (name, m)
        for child in elem:
            tag = local(child.tag)
            if tag not in keys:
                problems.append(f"{path}: unknown element <{tag}> in {shape.name}")
                continue
            name, m = keys[tag]
            if m.type_name == "list" and m.serialization.get("flattened"):
                walk_xml(child, m.member, f"{path}.{name}[]", problems)
            else:
                walk_xml(child, m, f"{path}.{name}", problems)
    elif t == "list":
        want = shape.member.serialization.get("name", "member")
        for i, child in enumerate(elem):
            if local(child.tag) != want:
                problems.append(f"{path}: list member <{local(child.tag)}>, want <{want}>")
                continue
            walk_xml(child, shape.member, f"{path}[{i}]", problems)
    elif t == "map":
        problems.append(f"{path}: maps are not checked")
    else:
        if len(elem):
            problems.append(f"{path}: scalar {shape.name} has child elements")
        check_scalar_text(shape, elem.text, path, problems)


PY_TYPES = {
    "string": str, "integer": int, "long": int, "boolean": bool,
    "float": float, "double": float, "timestamp": datetime.datetime, "blob": bytes,
}


def walk_parsed(value, shape, path, problems):
    t = shape.type_name
    if t == "structure":
        if not isinstance(value, dict):
            problems.append(f"{path}: not a structure")
            return
        for req in shape.required_members:
            if req not in value:
                problems.append(f"{path}: required member {req} missing")
        for k, v in value.items():
            if k == "ResponseMetadata" and path == "":
                continue
            if k not in shape.members:
                problems.append(f"{path}: unknown member {k}")
                continue
            walk_parsed(v, shape.members[k], f"{path}.{k}", problems)
    elif t == "list":
        if not isinstance(value, list):
            problems.append(f"{path}: not a list")
            return
        for i, v in enumerate(value):
            walk_parsed(v, shape.member, f"{path}[{i}]", problems)
    elif t in PY_TYPES:
        want = PY_TYPES[t]
        if not isinstance(value, want) or (want is int and isinstance(value, bool)):
            problems.append(f"{path}: {value!r} is not a {t}")
        elif t == "string" and shape.enum and value not in shape.enum:
            problems.append(f"{path}: {value!r} is not one of {shape.name}'s values")


def allowed_errors(service, op_model):
    if service == "ec2":
        return EC2_ERRORS
    codes = set(QUERY_COMMON_ERRORS)
    for e in op_model.error_shapes:
        codes.add(e.error_code or e.name)
    return codes


def get_path(v, path):
    for p in path:
        v = v[p]
    return v


def subst(v, saved):
    if isinstance(v, str) and v.startswith("$") and v[1:] in saved:
        return saved[v[1:]]
    if isinstance(v, list):
        return [subst(x, saved) for x in v]
    if isinstance(v, dict):
        return {k: subst(x, saved) for k, x in v.items()}
    return v


def main():
    spec = json.load(sys.stdin)
    session = botocore.session.get_session()
    cfg = botocore.config.Config(retries={"total_max_attempts": 1}, parameter_validation=True)
    clients = {}
    saved = {}
    results = []
    for case in spec["cases"]:
        svc = case["service"]
        if svc not in clients:
            clients[svc] = session.create_client(
                svc, region_name=spec["region"], endpoint_url=spec["endpoint"],
                aws_access_key_id=spec["access_key"], aws_secret_access_key=spec["secret_key"], config=cfg)
        client = clients[svc]
        op_model = client.meta.service_model.operation_model(case["op"])
        raw = {}

        def grab(response_dict=None, **_):
            raw["body"] = response_dict["body"]
            raw["status"] = response_dict["status_code"]

        event = f"before-parse.{client.meta.service_model.service_id.hyphenize()}.{case['op']}"
        client.meta.events.register(event, grab)
        problems = []
        code = "ok"
        parsed = None
        method = getattr(client, botocore.xform_name(case["op"]))
        try:
            parsed = method(**subst(case.get("params", {}), saved))
        except ClientError as e:
            code = e.response["Error"]["Code"]
            message = e.response["Error"].get("Message", "")
            for want in case.get("message", []):
                if want not in message:
                    problems.append(f"message {message!r} lacks {want!r}")
        except Exception as e:  # parameter validation, parsing
            code = "client:" + type(e).__name__
            problems.append(f"botocore: {e}")
        finally:
            client.meta.events.unregister(event, grab)
        if code != case.get("expect", "ok"):
            problems.append(f"answered {code}, want {case.get('expect', 'ok')}")
        if case.get("status") and raw.get("status") != case["status"]:
            problems.append(f"HTTP status {raw.get('status')}, want {case['status']}")
        if "body" in raw:
            try:
                root = ET.fromstring(raw["body"])
            except ET.ParseError as e:
                root = None
                problems.append(f"the body is not XML: {e}")
            if root is not None and code == "ok":
                out = op_model.output_shape
                if out is None:
                    pass
                elif svc == "ec2":
                    if local(root.tag) != case["op"] + "Response":
                        problems.append(f"root <{local(root.tag)}>")
                    body = ET.Element(out.name)
                    body.extend([c for c in root if local(c.tag) != "requestId"])
                    walk_xml(body, out, "", problems)
                else:
                    wrapper = out.serialization.get("resultWrapper")
                    found = [c for c in root if local(c.tag) == wrapper]
                    others = [local(c.tag) for c in root if local(c.tag) not in (wrapper, "ResponseMetadata")]
                    if others:
                        problems.append(f"unknown elements {others} in <{local(root.tag)}>")
                    if len(found) != 1:
                        problems.append(f"no <{wrapper}>")
                    else:
                        walk_xml(found[0], out, "", problems)
                if parsed is not None and out is not None:
                    walk_parsed(parsed, out, "", problems)
            elif root is not None and code != "ok":
                if code not in allowed_errors(svc, op_model):
                    problems.append(f"error code {code} is not one {svc} documents for {case['op']}")
        elif code == "ok" or not code.startswith("client:"):
            problems.append("no HTTP answer was seen")
        if parsed is not None:
            for var, path in case.get("save", {}).items():
                try:
                    saved[var] = get_path(parsed, path)
                except (KeyError, IndexError, TypeError):
                    problems.append(f"save {var}: no {path} in the answer")
        results.append({"name": case["name"], "problems": problems})
    json.dump({"botocore": botocore.__version__, "cases": results}, sys.stdout)


if __name__ == "__main__":
    main()
