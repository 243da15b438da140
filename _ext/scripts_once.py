"""Each script of a book page, once. sphinx-thebe and sphinx-togglebutton add their inline configuration (`const
THEBE_JS_URL = ...`) both to the registry and to the builder, one copy named None and one '', so every page declared
the constant twice and the browser logged "Uncaught SyntaxError: Identifier 'THEBE_JS_URL' has already been declared"."""


def _once(app, pagename, templatename, context, doctree):
    seen, kept = set(), []
    for script in context.get("script_files", []):
        key = (getattr(script, "filename", None) or "", tuple(sorted((k, str(v)) for k, v in script.attributes.items())))
        if key not in seen:
            seen.add(key)
            kept.append(script)
    context["script_files"] = kept


def setup(app):
    app.connect("html-page-context", _once, priority=900)  # after every extension has added its scripts
    return {"parallel_read_safe": True, "parallel_write_safe": True}
