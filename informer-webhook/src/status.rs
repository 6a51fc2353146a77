//! The `meta/v1` `Status` values the reviews carry: a denied admission's reason, a conversion's
//! result. The bottom of the crate: every review type builds its answers from these.
//!
//! kube-apiserver reads `code`, `reason` and `message` of a denial (it raises a code below 400
//! to 400 and prefixes the message with `admission webhook "<name>" denied the request: `), and
//! `status` (`Success` or `Failure`) and `message` of a conversion result.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Status;

/// `Status.status` of a successful conversion (`metav1.StatusSuccess`).
pub(crate) const SUCCESS: &str = "Success";

/// `Status.status` of a failure (`metav1.StatusFailure`).
pub(crate) const FAILURE: &str = "Failure";

/// A failure with `code`, the `reason` apimachinery gives that code, and `message`.
pub(crate) fn failure(code: u16, message: impl Into<String>) -> Status {
    Status {
        code: Some(i32::from(code)),
        message: Some(message.into()),
        reason: Some(reason(code).to_owned()),
        status: Some(FAILURE.to_owned()),
        ..Status::default()
    }
}

/// A success, as a conversion result states it.
pub(crate) fn success() -> Status {
    Status { status: Some(SUCCESS.to_owned()), ..Status::default() }
}

/// apimachinery's `StatusReason` for an HTTP code (`metav1.StatusReason*`, as
/// `apierrors.NewGenericServerResponse` pairs them); empty for a code it has no reason for.
fn reason(code: u16) -> &'static str {
    match code {
        400 => "BadRequest",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "NotFound",
        405 => "MethodNotAllowed",
        406 => "NotAcceptable",
        409 => "Conflict",
        410 => "Gone",
        413 => "RequestEntityTooLarge",
        415 => "UnsupportedMediaType",
        422 => "Invalid",
        429 => "TooManyRequests",
        500 => "InternalError",
        503 => "ServiceUnavailable",
        504 => "Timeout",
        _ => "",
    }
}

/// The message of a panic's payload: the `&str` or `String` that `panic!` was given.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_carries_the_reason_of_its_code() {
        let status = failure(422, "spec.size: must be at most 10");
        assert_eq!(status.code, Some(422));
        assert_eq!(status.reason.as_deref(), Some("Invalid"));
        assert_eq!(status.status.as_deref(), Some("Failure"));
        assert_eq!(status.message.as_deref(), Some("spec.size: must be at most 10"));
    }

    #[test]
    fn a_panic_message_is_read_from_either_payload() {
        let text: Box<dyn std::any::Any + Send> = Box::new("boom");
        assert_eq!(panic_message(text.as_ref()), "boom");
        let owned: Box<dyn std::any::Any + Send> = Box::new(String::from("bang"));
        assert_eq!(panic_message(owned.as_ref()), "bang");
        let other: Box<dyn std::any::Any + Send> = Box::new(7);
        assert_eq!(panic_message(other.as_ref()), "a panic without a message");
    }
}
