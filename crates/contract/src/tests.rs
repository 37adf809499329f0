//! The reader and the judge on a small document of their own, so that
//! each refusal is seen to happen: an answer that departs from the
//! document in any one way is caught, and one that keeps to it passes.

use serde_json::json;

use crate::{Answer, Doc, DocError, In, Mismatch};

const DOC: &str = r##"
openapi: 3.1.0
info: { title: t, version: "1" }
paths:
  /things/{name}:
    parameters:
      - { name: name, in: path, required: true, schema: { type: string } }
    get:
      parameters:
        - name: ids
          in: query
          style: form
          explode: false
          schema: { type: array, items: { type: integer } }
        - { $ref: "#/components/parameters/limit" }
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema: { $ref: "#/components/schemas/Thing" }
            text/plain:
              schema: { type: string }
        "204": { description: nothing }
        "4XX": { $ref: "#/components/responses/Error" }
    post:
      requestBody:
        required: true
        content:
          application/json:
            schema: { $ref: "#/components/schemas/Thing" }
      responses:
        "200":
          description: a stream
          content:
            application/x-ndjson:
              schema: { $ref: "#/components/schemas/Thing" }
components:
  parameters:
    limit:
      name: limit
      in: query
      schema: { type: integer, minimum: 0, examples: [3] }
  schemas:
    Thing:
      type: object
      required: [id]
      additionalProperties: false
      properties:
        id: { type: integer, minimum: 1 }
        tag: { type: [string, "null"] }
  responses:
    Error:
      description: refused
      content:
        application/json:
          schema:
            type: object
            required: [error]
"##;

fn doc() -> Doc {
    Doc::parse(DOC).unwrap()
}

fn json_answer(status: u16, body: &[u8]) -> Answer<'_> {
    Answer {
        status,
        content_type: Some("application/json; charset=utf-8"),
        body,
        cut: false,
    }
}

#[test]
fn operations_are_read_with_their_parameters_body_and_responses() {
    let d = doc();
    let ids: Vec<String> = d.operations().iter().map(|o| o.id()).collect();
    assert_eq!(ids, ["GET /things/{name}", "POST /things/{name}"]);
    let get = d.operation("get", "/things/{name}").unwrap();
    let names: Vec<(&str, In, bool)> = get
        .params
        .iter()
        .map(|p| (p.name.as_str(), p.at, p.required))
        .collect();
    assert_eq!(
        names,
        [
            ("ids", In::Query, false),
            ("limit", In::Query, false),
            ("name", In::Path, true)
        ]
    );
    assert!(get.param("ids").unwrap().comma_joined);
    // The parameter's $ref is followed, its schema flattened.
    assert_eq!(get.param("limit").unwrap().schema["minimum"], 0);
    assert!(get.body.is_none());
    let post = d.operation("POST", "/things/{name}").unwrap();
    assert!(post.body.as_ref().unwrap().required);
    // The exact status, then its class.
    assert!(get.response(200).unwrap().get("content").is_some());
    assert!(get.response(404).is_some());
    assert!(get.response(500).is_none());
}

#[test]
fn only_a_3_1_document_is_read() {
    assert!(matches!(
        Doc::parse("openapi: 3.0.3\npaths: {}\n"),
        Err(DocError::Version(_))
    ));
    assert!(matches!(
        Doc::parse("openapi: 3.1.0\n"),
        Err(DocError::NoPaths)
    ));
    let dangling =
        "openapi: 3.1.0\npaths:\n  /a:\n    get:\n      parameters: [{ $ref: \"#/nowhere\" }]\n";
    assert!(matches!(
        Doc::parse(dangling),
        Err(DocError::DanglingRef(_))
    ));
}

#[test]
fn the_schema_check_follows_refs_and_can_fail() {
    let d = doc();
    let thing = json!({ "$ref": "#/components/schemas/Thing" });
    d.check(&thing, &json!({"id": 1, "tag": null})).unwrap();
    // JSON Schema's integer: 2.0 is 2.
    d.check(&thing, &json!({"id": 2.0})).unwrap();
    for bad in [
        json!({}),
        json!({"id": 0}),
        json!({"id": 1.5}),
        json!({"id": "1"}),
        json!({"id": 1, "tag": 3}),
        json!({"id": 1, "other": 1}),
        json!([1]),
    ] {
        let e = d.check(&thing, &bad).unwrap_err();
        assert!(!e.is_empty(), "{bad}");
        assert!(!d.fits_component("Thing", &bad), "{bad}");
    }
    assert!(d.fits_component("Thing", &json!({"id": 7})));
}

#[test]
fn an_answer_that_keeps_to_the_document_passes() {
    let d = doc();
    let get = d.operation("GET", "/things/{name}").unwrap();
    d.judge(get, &json_answer(200, br#"{"id":1}"#)).unwrap();
    d.judge(get, &json_answer(404, br#"{"error":{}}"#)).unwrap();
    let text = Answer {
        status: 200,
        content_type: Some("text/plain; charset=utf-8"),
        body: "é\n".as_bytes(),
        cut: false,
    };
    d.judge(get, &text).unwrap();
    let none = Answer {
        status: 204,
        content_type: None,
        body: b"",
        cut: false,
    };
    d.judge(get, &none).unwrap();
    let post = d.operation("POST", "/things/{name}").unwrap();
    // A cut stream may end inside a line; that line is not judged.
    let stream = Answer {
        status: 200,
        content_type: Some("application/x-ndjson"),
        body: b"{\"id\":1}\n{\"id\":2}\n{\"id\":",
        cut: true,
    };
    d.judge(post, &stream).unwrap();
}

#[test]
fn an_answer_off_the_document_is_caught() {
    let d = doc();
    let get = d.operation("GET", "/things/{name}").unwrap();
    let judge = |a: Answer<'_>| d.judge(get, &a).unwrap_err();
    assert!(matches!(
        judge(json_answer(500, b"{}")),
        Mismatch::UndeclaredStatus { status: 500, .. }
    ));
    assert!(matches!(
        judge(json_answer(204, b"{}")),
        Mismatch::UnexpectedBody { status: 204, .. }
    ));
    let yaml = Answer {
        content_type: Some("application/yaml"),
        ..json_answer(200, b"a: 1")
    };
    assert!(matches!(judge(yaml), Mismatch::UndeclaredMedia { .. }));
    let untyped = Answer {
        content_type: None,
        ..json_answer(200, b"{}")
    };
    assert!(matches!(judge(untyped), Mismatch::UndeclaredMedia { .. }));
    assert!(matches!(
        judge(json_answer(200, b"{\"id\":")),
        Mismatch::NotJson { .. }
    ));
    let e = judge(json_answer(200, br#"{"id":0}"#));
    assert!(matches!(e, Mismatch::Misfit { .. }), "{e}");
    assert!(e.to_string().contains("does not fit"), "{e}");
    assert!(matches!(
        judge(json_answer(400, b"{}")),
        Mismatch::Misfit { .. }
    ));
    let latin1 = Answer {
        status: 200,
        content_type: Some("text/plain"),
        body: b"\xe9",
        cut: false,
    };
    assert!(matches!(judge(latin1), Mismatch::NotUtf8 { .. }));

    let post = d.operation("POST", "/things/{name}").unwrap();
    let stream = |body: &'static [u8], cut| Answer {
        status: 200,
        content_type: Some("application/x-ndjson"),
        body,
        cut,
    };
    let e = d
        .judge(post, &stream(b"{\"id\":1}\n{\"id\":-1}\n", false))
        .unwrap_err();
    assert!(
        matches!(&e, Mismatch::Misfit { at, .. } if at == "line 1"),
        "{e}"
    );
    // Not cut: a last line without its end is still a line.
    let e = d
        .judge(post, &stream(b"{\"id\":1}\n{\"id\":", false))
        .unwrap_err();
    assert!(
        matches!(&e, Mismatch::NotJson { at, .. } if at == "line 1"),
        "{e}"
    );
}
