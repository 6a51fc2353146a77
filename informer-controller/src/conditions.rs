//! Status conditions: the `status.conditions` list of `metav1.Condition`s a reconcile keeps
//! up to date, as apimachinery's `meta.SetStatusCondition` and its siblings
//! (`k8s.io/apimachinery/pkg/api/meta/conditions.go`) keep it.
//!
//! **Who it is for.** Reconcile functions of custom resources whose status holds
//! `Vec<Condition>` (k8s-openapi's `metav1.Condition`): they say what they found in conditions
//! such as `Ready` or `Progressing`, and write the status only when [`set`] says it changed.
//!
//! A condition has one entry per `type`. [`set`] adds it, or updates the entry of its type:
//! `lastTransitionTime` moves only when the `status` changes (from `False` to `True`, say), so
//! it tells how long the condition has held; `reason`, `message` and `observedGeneration` are
//! always the new ones. A condition made by [`new`] carries no transition time ([`ZERO_TIME`],
//! Go's zero time, which apimachinery's `IsZero` tests) and [`set`] stamps it with the time of
//! the call. [`set_at`] takes that time from the caller, for tests. A status whose list is
//! optional (`Option<Vec<Condition>>`) passes `status.conditions.get_or_insert_with(Vec::new)`.
//!
//! In a reconcile function, after looking at the world:
//!
//! ```
//! use informer_controller::conditions::{self, ConditionExt, ConditionStatus};
//! use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta};
//!
//! /// The status of a custom resource, as its `status` subresource holds it.
//! #[derive(Default)]
//! struct WidgetStatus {
//!     conditions: Vec<Condition>,
//! }
//!
//! /// Says in the status what the reconcile found; true if the status must be written.
//! fn report(meta: &ObjectMeta, status: &mut WidgetStatus, ready_replicas: i32) -> bool {
//!     let ready = if ready_replicas > 0 {
//!         conditions::new("Ready", ConditionStatus::True, "ReplicasReady", "")
//!     } else {
//!         conditions::new("Ready", ConditionStatus::False, "NoReplicas", "no replica is ready")
//!     };
//!     // Which generation of the spec this verdict is about, for `kubectl wait` and users.
//!     conditions::set(&mut status.conditions, ready.observed_generation(meta.generation))
//! }
//!
//! let meta = ObjectMeta { generation: Some(2), ..ObjectMeta::default() };
//! let mut status = WidgetStatus::default();
//! assert!(report(&meta, &mut status, 0)); // new: write the status
//! assert!(!report(&meta, &mut status, 0)); // nothing new: no write
//! assert!(conditions::is_false(&status.conditions, "Ready"));
//!
//! assert!(report(&meta, &mut status, 3)); // False to True: a new lastTransitionTime
//! assert!(conditions::is_true(&status.conditions, "Ready"));
//! let ready = conditions::find(&status.conditions, "Ready");
//! assert_eq!(ready.map(|c| c.reason.as_str()), Some("ReplicasReady"));
//! ```

use std::fmt;
use std::str::FromStr;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;

/// A `lastTransitionTime` that is not set: Go's zero `time.Time`, `0001-01-01T00:00:00Z`, which
/// apimachinery's `Time.IsZero` tests.
///
/// k8s-openapi's [`Condition`] must carry a time (the API requires one), so "not set" is this
/// time, as it is in Go: [`new`] makes conditions with it, and [`set`] replaces it by the time
/// of the call. Any other time, the Unix epoch included, is a time the caller chose.
#[doc(alias = "IsZero")]
pub const ZERO_TIME: Time = Time(Timestamp::constant(-62_135_596_800, 0));

/// The `status` of a condition: `True`, `False` or `Unknown`, as apimachinery's
/// `metav1.ConditionStatus` names them.
///
/// ```
/// use informer_controller::conditions::ConditionStatus;
///
/// assert_eq!(ConditionStatus::True.as_str(), "True");
/// assert_eq!("Unknown".parse::<ConditionStatus>(), Ok(ConditionStatus::Unknown));
/// assert!("true".parse::<ConditionStatus>().is_err()); // the API's spelling only
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConditionStatus {
    /// The condition holds (`metav1.ConditionTrue`).
    True,
    /// The condition does not hold (`metav1.ConditionFalse`).
    False,
    /// Whether the condition holds cannot be told (`metav1.ConditionUnknown`).
    Unknown,
}

impl ConditionStatus {
    /// The status as the API writes it: `True`, `False` or `Unknown`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::True => "True",
            Self::False => "False",
            Self::Unknown => "Unknown",
        }
    }
}

impl fmt::Display for ConditionStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ConditionStatus {
    type Err = ParseConditionStatusError;

    /// Reads the API's spelling, case included: the API server accepts no other.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "True" => Ok(Self::True),
            "False" => Ok(Self::False),
            "Unknown" => Ok(Self::Unknown),
            _ => Err(ParseConditionStatusError { value: s.to_owned() }),
        }
    }
}

impl From<ConditionStatus> for String {
    fn from(status: ConditionStatus) -> Self {
        status.as_str().to_owned()
    }
}

/// A condition `status` that is none of `True`, `False` and `Unknown`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "condition status {value:?} is none of True, False and Unknown (the API's spelling, case included)"
)]
pub struct ParseConditionStatusError {
    /// The status read.
    pub value: String,
}

/// A condition of `type_` with `status`, `reason` (a CamelCase word, which the API requires)
/// and `message` (for people; may be empty), to hand to [`set`].
///
/// Its `lastTransitionTime` is [`ZERO_TIME`], which [`set`] replaces by the time of the call,
/// and it has no `observedGeneration` ([`ConditionExt::observed_generation`] gives one).
#[must_use]
pub fn new(
    type_: impl Into<String>,
    status: ConditionStatus,
    reason: impl Into<String>,
    message: impl Into<String>,
) -> Condition {
    Condition {
        type_: type_.into(),
        status: status.into(),
        reason: reason.into(),
        message: message.into(),
        last_transition_time: ZERO_TIME,
        observed_generation: None,
    }
}

/// Builders for a [`Condition`]. Implemented for [`Condition`] only.
pub trait ConditionExt: sealed::Sealed {
    /// The condition with `observedGeneration` set to `generation`: the object's
    /// `metadata.generation` (`obj.meta().generation`) when the reconcile looked at it, which
    /// tells readers whether the condition is about the current spec.
    #[must_use]
    fn observed_generation(self, generation: Option<i64>) -> Self;
}

impl ConditionExt for Condition {
    fn observed_generation(mut self, generation: Option<i64>) -> Self {
        self.observed_generation = generation;
        self
    }
}

mod sealed {
    /// Keeps [`ConditionExt`](super::ConditionExt) to [`Condition`](super::Condition), so that
    /// methods can be added to it.
    pub trait Sealed {}
    impl Sealed for k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition {}
}

/// Sets `new` in `conditions`, as of now; true if anything changed (then the status must be
/// written).
///
/// - A condition of `new`'s type that is not there yet is appended; its `lastTransitionTime`
///   is now if it has none ([`ZERO_TIME`]), else its own.
/// - A condition of that type that is there takes `new`'s `reason`, `message` and
///   `observedGeneration`. If its `status` changes, its `lastTransitionTime` becomes `new`'s,
///   or now if `new` has none; if not, it keeps its own, whatever `new` carries.
///
/// [`set_at`] does the same with a time of the caller's.
#[doc(alias = "SetStatusCondition")]
pub fn set(conditions: &mut Vec<Condition>, new: Condition) -> bool {
    set_at(conditions, new, Time(Timestamp::now()))
}

/// [`set`] with `now` as the time of the call: the `lastTransitionTime` of a new condition
/// that has none, or of one whose status changes to `new`'s, which has none.
///
/// ```
/// use informer_controller::conditions::{self, ConditionStatus};
/// use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
/// use k8s_openapi::jiff::Timestamp;
///
/// let mut conditions = Vec::new();
/// let noon = Time("2025-06-01T12:00:00Z".parse::<Timestamp>()?);
/// let ready = conditions::new("Ready", ConditionStatus::True, "Started", "");
/// assert!(conditions::set_at(&mut conditions, ready, noon.clone()));
/// assert_eq!(conditions[0].last_transition_time, noon);
/// # Ok::<(), k8s_openapi::jiff::Error>(())
/// ```
#[doc(alias = "SetStatusCondition")]
pub fn set_at(conditions: &mut Vec<Condition>, mut new: Condition, now: Time) -> bool {
    let Some(existing) = find_mut(conditions, &new.type_) else {
        if is_zero(&new.last_transition_time) {
            new.last_transition_time = now;
        }
        conditions.push(new);
        return true;
    };
    let mut changed = false;
    if existing.status != new.status {
        existing.status = new.status;
        existing.last_transition_time =
            if is_zero(&new.last_transition_time) { now } else { new.last_transition_time };
        changed = true;
    }
    if existing.reason != new.reason {
        existing.reason = new.reason;
        changed = true;
    }
    if existing.message != new.message {
        existing.message = new.message;
        changed = true;
    }
    if existing.observed_generation != new.observed_generation {
        existing.observed_generation = new.observed_generation;
        changed = true;
    }
    changed
}

/// Removes the condition of `type_` from `conditions`; true if there was one.
#[doc(alias = "RemoveStatusCondition")]
pub fn remove(conditions: &mut Vec<Condition>, type_: &str) -> bool {
    let before = conditions.len();
    conditions.retain(|condition| condition.type_ != type_);
    conditions.len() != before
}

/// The condition of `type_` in `conditions`, if there is one.
#[doc(alias = "FindStatusCondition")]
#[must_use]
pub fn find<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|condition| condition.type_ == type_)
}

/// The condition of `type_` in `conditions`, to change, if there is one.
///
/// Changing its `status` this way leaves its `lastTransitionTime` as it was: [`set`] moves it.
#[doc(alias = "FindStatusCondition")]
#[must_use]
pub fn find_mut<'a>(conditions: &'a mut [Condition], type_: &str) -> Option<&'a mut Condition> {
    conditions.iter_mut().find(|condition| condition.type_ == type_)
}

/// Whether `conditions` has a condition of `type_` whose status is `True`.
#[doc(alias = "IsStatusConditionTrue")]
#[must_use]
pub fn is_true(conditions: &[Condition], type_: &str) -> bool {
    is_present_and_equal(conditions, type_, ConditionStatus::True)
}

/// Whether `conditions` has a condition of `type_` whose status is `False` (a missing
/// condition is neither true nor false).
#[doc(alias = "IsStatusConditionFalse")]
#[must_use]
pub fn is_false(conditions: &[Condition], type_: &str) -> bool {
    is_present_and_equal(conditions, type_, ConditionStatus::False)
}

/// Whether `conditions` has a condition of `type_` whose status is `status`.
#[doc(alias = "IsStatusConditionPresentAndEqual")]
#[must_use]
pub fn is_present_and_equal(
    conditions: &[Condition],
    type_: &str,
    status: ConditionStatus,
) -> bool {
    find(conditions, type_).is_some_and(|condition| condition.status == status.as_str())
}

/// Whether `time` is unset: [`ZERO_TIME`].
fn is_zero(time: &Time) -> bool {
    *time == ZERO_TIME
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(time: &str) -> Time {
        Time(time.parse().unwrap())
    }

    /// A condition with only a type and a status, as the Go tests write `{Type: "first"}`.
    fn bare(type_: &str, status: &str) -> Condition {
        Condition {
            type_: type_.to_owned(),
            status: status.to_owned(),
            reason: String::new(),
            message: String::new(),
            last_transition_time: ZERO_TIME,
            observed_generation: None,
        }
    }

    fn with(
        type_: &str,
        status: &str,
        time: &Time,
        reason: &str,
        message: &str,
        generation: Option<i64>,
    ) -> Condition {
        Condition {
            type_: type_.to_owned(),
            status: status.to_owned(),
            reason: reason.to_owned(),
            message: message.to_owned(),
            last_transition_time: time.clone(),
            observed_generation: generation,
        }
    }

    const NOW: &str = "2025-06-01T12:00:00Z";
    const HOUR_BEFORE: &str = "2025-06-01T11:00:00Z";
    const HOUR_AFTER: &str = "2025-06-01T13:00:00Z";

    // TestSetStatusCondition "should-add"
    #[test]
    fn set_should_add() {
        let before = at(HOUR_BEFORE);
        let mut conditions = vec![bare("first", ""), bare("third", "")];
        let changed = set_at(
            &mut conditions,
            with("second", "True", &before, "reason", "message", None),
            at(NOW),
        );
        assert!(changed);
        assert_eq!(
            conditions,
            [
                bare("first", ""),
                bare("third", ""),
                with("second", "True", &before, "reason", "message", None),
            ]
        );
    }

    // TestSetStatusCondition "use-supplied-time"
    #[test]
    fn set_use_supplied_time() {
        let before = at(HOUR_BEFORE);
        let mut conditions = vec![bare("first", ""), bare("second", "False"), bare("third", "")];
        let changed = set_at(
            &mut conditions,
            with("second", "True", &before, "reason", "message", None),
            at(NOW),
        );
        assert!(changed);
        assert_eq!(
            conditions,
            [
                bare("first", ""),
                with("second", "True", &before, "reason", "message", None),
                bare("third", ""),
            ]
        );
    }

    // TestSetStatusCondition "update-fields"
    #[test]
    fn set_update_fields() {
        let (before, after) = (at(HOUR_BEFORE), at(HOUR_AFTER));
        let mut conditions = vec![
            bare("first", ""),
            with("second", "True", &before, "", "", None),
            bare("third", ""),
        ];
        let changed = set_at(
            &mut conditions,
            with("second", "True", &after, "reason", "message", Some(3)),
            at(NOW),
        );
        assert!(changed);
        assert_eq!(
            conditions,
            [
                bare("first", ""),
                // The status did not change: the transition time stays.
                with("second", "True", &before, "reason", "message", Some(3)),
                bare("third", ""),
            ]
        );
    }

    // TestSetStatusCondition "nothing changes"
    #[test]
    fn set_nothing_changes() {
        let before = at(HOUR_BEFORE);
        let mut conditions = vec![with("type", "True", &before, "", "", None)];
        let changed = set_at(&mut conditions, with("type", "True", &before, "", "", None), at(NOW));
        assert!(!changed);
        assert_eq!(conditions, [with("type", "True", &before, "", "", None)]);
    }

    // SetStatusCondition's doc: "LastTransitionTime is set to now() if unset" for a new one.
    #[test]
    fn set_stamps_a_new_condition_without_time_with_now() {
        let mut conditions = Vec::new();
        assert!(set_at(&mut conditions, new("Ready", ConditionStatus::True, "Up", ""), at(NOW)));
        assert_eq!(conditions[0].last_transition_time, at(NOW));
    }

    // SetStatusCondition's doc: "LastTransitionTime is set to now if the new status differs".
    #[test]
    fn set_stamps_a_status_change_without_time_with_now() {
        let before = at(HOUR_BEFORE);
        let mut conditions = vec![with("Ready", "False", &before, "Down", "", None)];
        assert!(set_at(&mut conditions, new("Ready", ConditionStatus::True, "Up", ""), at(NOW)));
        assert_eq!(conditions, [with("Ready", "True", &at(NOW), "Up", "", None)]);
    }

    #[test]
    fn set_with_the_same_status_changes_only_reason_message_and_generation() {
        let before = at(HOUR_BEFORE);
        let mut conditions = vec![with("Ready", "False", &before, "Down", "", Some(1))];
        let next = new("Ready", ConditionStatus::False, "Down", "").observed_generation(Some(2));
        assert!(set_at(&mut conditions, next.clone(), at(NOW)));
        assert_eq!(conditions, [with("Ready", "False", &before, "Down", "", Some(2))]);
        assert!(!set_at(&mut conditions, next, at(HOUR_AFTER)));
        assert!(set_at(
            &mut conditions,
            new("Ready", ConditionStatus::False, "Down", "disk full").observed_generation(Some(2)),
            at(NOW)
        ));
        assert_eq!(conditions, [with("Ready", "False", &before, "Down", "disk full", Some(2))]);
    }

    #[test]
    fn set_takes_the_time_from_the_clock() {
        let mut conditions = Vec::new();
        let start = Timestamp::now();
        assert!(set(&mut conditions, new("Ready", ConditionStatus::Unknown, "Starting", "")));
        assert!(conditions[0].last_transition_time.0 >= start);
    }

    // TestRemoveStatusCondition "present"
    #[test]
    fn remove_present() {
        let mut conditions = vec![bare("first", ""), bare("second", ""), bare("third", "")];
        assert!(remove(&mut conditions, "second"));
        assert_eq!(conditions, [bare("first", ""), bare("third", "")]);
    }

    // TestRemoveStatusCondition "not-present"
    #[test]
    fn remove_not_present() {
        let mut conditions = vec![bare("first", ""), bare("second", ""), bare("third", "")];
        assert!(!remove(&mut conditions, "fourth"));
        assert_eq!(conditions, [bare("first", ""), bare("second", ""), bare("third", "")]);
    }

    // TestRemoveStatusCondition "empty_conditions"
    #[test]
    fn remove_empty_conditions() {
        let mut conditions = Vec::new();
        assert!(!remove(&mut conditions, "Foo"));
        assert!(conditions.is_empty());
    }

    // TestFindStatusCondition "not-present"
    #[test]
    fn find_not_present() {
        assert_eq!(find(&[bare("first", "")], "second"), None);
    }

    // TestFindStatusCondition "present"
    #[test]
    fn find_present() {
        assert_eq!(
            find(&[bare("first", ""), bare("second", "")], "second"),
            Some(&bare("second", ""))
        );
    }

    #[test]
    fn find_mut_changes_the_condition_in_place() {
        let mut conditions = vec![bare("first", ""), bare("second", "")];
        if let Some(condition) = find_mut(&mut conditions, "second") {
            condition.message = "changed".to_owned();
        }
        assert_eq!(conditions[1].message, "changed");
        assert!(find_mut(&mut conditions, "third").is_none());
    }

    // TestIsStatusConditionPresentAndEqual "doesnt-match-true"
    #[test]
    fn is_present_and_equal_doesnt_match_true() {
        assert!(!is_present_and_equal(&[bare("first", "Unknown")], "first", ConditionStatus::True));
    }

    // TestIsStatusConditionPresentAndEqual "does-match-true"
    #[test]
    fn is_present_and_equal_does_match_true() {
        assert!(is_present_and_equal(&[bare("first", "True")], "first", ConditionStatus::True));
    }

    // TestIsStatusConditionPresentAndEqual "does-match-false"
    #[test]
    fn is_present_and_equal_does_match_false() {
        assert!(is_present_and_equal(&[bare("first", "False")], "first", ConditionStatus::False));
    }

    #[test]
    fn is_present_and_equal_is_false_for_a_missing_type() {
        assert!(!is_present_and_equal(&[bare("first", "True")], "second", ConditionStatus::True));
    }

    // IsStatusConditionTrue and IsStatusConditionFalse (no test of their own upstream).
    #[test]
    fn is_true_and_is_false_need_the_condition() {
        let conditions =
            [bare("Ready", "True"), bare("Degraded", "False"), bare("Synced", "Unknown")];
        assert!(is_true(&conditions, "Ready"));
        assert!(!is_false(&conditions, "Ready"));
        assert!(is_false(&conditions, "Degraded"));
        assert!(!is_true(&conditions, "Degraded"));
        assert!(!is_true(&conditions, "Synced") && !is_false(&conditions, "Synced"));
        assert!(!is_true(&conditions, "Missing") && !is_false(&conditions, "Missing"));
    }

    #[test]
    fn condition_status_round_trips_and_rejects_other_spellings() {
        for status in [ConditionStatus::True, ConditionStatus::False, ConditionStatus::Unknown] {
            assert_eq!(status.to_string().parse::<ConditionStatus>(), Ok(status));
        }
        let error = "true".parse::<ConditionStatus>().unwrap_err();
        assert_eq!(error.value, "true");
        assert!(error.to_string().contains("\"true\""), "{error}");
        assert!("".parse::<ConditionStatus>().is_err());
    }

    #[test]
    fn new_leaves_the_time_unset_and_observed_generation_sets_it() {
        let condition = new("Ready", ConditionStatus::False, "NoReplicas", "none ready")
            .observed_generation(Some(4));
        assert_eq!(
            condition,
            with("Ready", "False", &ZERO_TIME, "NoReplicas", "none ready", Some(4))
        );
        assert!(is_zero(&condition.last_transition_time));
        // Go's zero time, as Go writes it; the epoch is a time like any other.
        assert_eq!(serde_json::to_value(&ZERO_TIME).unwrap(), "0001-01-01T00:00:00Z");
        assert!(!is_zero(&Time(Timestamp::UNIX_EPOCH)));
    }

    #[test]
    fn a_set_condition_serialises_as_the_api_has_it() {
        let mut conditions = Vec::new();
        set_at(
            &mut conditions,
            new("Ready", ConditionStatus::True, "Up", "").observed_generation(Some(2)),
            at(NOW),
        );
        assert_eq!(
            serde_json::to_value(&conditions).unwrap(),
            serde_json::json!([{
                "type": "Ready",
                "status": "True",
                "reason": "Up",
                "message": "",
                "lastTransitionTime": NOW,
                "observedGeneration": 2,
            }])
        );
    }
}
