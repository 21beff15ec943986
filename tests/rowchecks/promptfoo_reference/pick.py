def get_transform(output, context):
    return output.upper() + "|" + context["vars"]["topic"]


def get_assert(output, context):
    return {
        "pass": True,
        "score": 0.25,
        "reason": "py " + str(sorted(context.keys())) + " " + str(type(output).__name__),
    }


def numeric(output, context):
    return 0.4
