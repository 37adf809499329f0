//! What can be wrong: with the document itself ([`DocError`]), or with an
//! answer judged by it ([`Mismatch`]). Tests tell the cases apart by
//! variant; the messages say enough to find the request and the place in
//! the body.

/// What is wrong with the document itself (not with an answer).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DocError {
    /// The text is no YAML.
    #[error("not YAML: {0}")]
    NotYaml(String),
    /// Another OpenAPI version than 3.1.
    #[error(
        "OpenAPI {0:?}: only 3.1 is read (3.0's `nullable` and \
         `exclusiveMinimum: true` mean other things)"
    )]
    Version(String),
    /// A `$ref` into another document.
    #[error("a non-local $ref {0}")]
    NonLocalRef(String),
    /// A `$ref` to nothing.
    #[error("a dangling $ref {0}")]
    DanglingRef(String),
    /// `$ref`s that lead back to themselves.
    #[error("a $ref loop")]
    RefLoop,
    /// No `paths` object.
    #[error("no paths")]
    NoPaths,
    /// A parameter whose `in` is none of path, query, header.
    #[error("parameter {name}: `in: {place:?}`")]
    ParamPlace {
        /// The parameter's name.
        name: String,
        /// Its `in`, if it has one.
        place: Option<String>,
    },
    /// A request body that is not JSON alone.
    #[error("{operation}: a request body of {media:?}: only application/json is read")]
    BodyMedia {
        /// The operation (`post /v1/sync`).
        operation: String,
        /// The media types it lists.
        media: Vec<String>,
    },
}

/// How an answer departs from the document.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Mismatch {
    /// The operation declares no response for the status.
    #[error("status {status} is not declared: {body}")]
    UndeclaredStatus {
        /// The status.
        status: u16,
        /// The body, shortened.
        body: String,
    },
    /// A body where the response declares none.
    #[error("status {status} declares no body, got {body:?}")]
    UnexpectedBody {
        /// The status.
        status: u16,
        /// The body, shortened.
        body: String,
    },
    /// A content type the response does not declare.
    #[error("content type {media:?} is not declared for {status} (declared: {declared:?})")]
    UndeclaredMedia {
        /// The status.
        status: u16,
        /// The answer's media type (empty: none).
        media: String,
        /// The declared ones.
        declared: Vec<String>,
    },
    /// A JSON body, or an NDJSON line, that is no JSON.
    #[error("{at} is no JSON ({error}): {text}")]
    NotJson {
        /// `the body`, or `line N`.
        at: String,
        /// The parser's message.
        error: String,
        /// The text, shortened.
        text: String,
    },
    /// A value that does not fit its schema.
    #[error("{at} does not fit the schema: {errors}; {at}: {text}")]
    Misfit {
        /// `the body`, or `line N`.
        at: String,
        /// The validator's messages.
        errors: String,
        /// The value, shortened.
        text: String,
    },
    /// A text body that is no UTF-8.
    #[error("a {media} body that is no UTF-8")]
    NotUtf8 {
        /// The media type.
        media: String,
    },
}
