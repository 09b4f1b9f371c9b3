//! Ordering of CFIs (EPUB CFI 1.1 sorting rules).

use std::cmp::Ordering;

use super::{Cfi, Offset, Path};

pub(super) fn compare(a: &Cfi, b: &Cfi) -> Option<Ordering> {
    let first = compare_paths(&a.start().path, &b.start().path)?;
    if first != Ordering::Equal || !(a.is_range() && b.is_range()) {
        return Some(first);
    }
    compare_paths(&a.end().path, &b.end().path)
}

fn compare_paths(a: &Path, b: &Path) -> Option<Ordering> {
    for (sa, sb) in a.steps.iter().zip(&b.steps) {
        match sa.index.cmp(&sb.index) {
            Ordering::Equal => {
                if sa.redirected != sb.redirected {
                    return None;
                }
            }
            other => return Some(other),
        }
    }
    match a.steps.len().cmp(&b.steps.len()) {
        Ordering::Equal => {}
        other => return Some(other),
    }
    match (&a.offset, &b.offset) {
        (Some(_), Some(_)) if a.offset_redirected != b.offset_redirected => None,
        (x, y) => compare_offsets(x.as_ref(), y.as_ref()),
    }
}

fn is_zero(o: &Offset) -> bool {
    matches!(
        o,
        Offset::Character {
            utf16_offset: 0,
            ..
        }
    )
}

fn compare_offsets(a: Option<&Offset>, b: Option<&Offset>) -> Option<Ordering> {
    match (a, b) {
        (None, None) => Some(Ordering::Equal),
        (None, Some(o)) => Some(if is_zero(o) {
            Ordering::Equal
        } else {
            Ordering::Less
        }),
        (Some(o), None) => Some(if is_zero(o) {
            Ordering::Equal
        } else {
            Ordering::Greater
        }),
        (
            Some(Offset::Character {
                utf16_offset: x, ..
            }),
            Some(Offset::Character {
                utf16_offset: y, ..
            }),
        ) => Some(x.cmp(y)),
        (Some(Offset::Spatial { x: ax, y: ay }), Some(Offset::Spatial { x: bx, y: by })) => {
            cmp_spatial((ax.value(), ay.value()), (bx.value(), by.value()))
        }
        (
            Some(Offset::Temporal {
                seconds: at,
                spatial: asp,
            }),
            Some(Offset::Temporal {
                seconds: bt,
                spatial: bsp,
            }),
        ) => match at.value().partial_cmp(&bt.value())? {
            Ordering::Equal => match (asp, bsp) {
                (None, None) => Some(Ordering::Equal),
                (None, Some(_)) => Some(Ordering::Less),
                (Some(_), None) => Some(Ordering::Greater),
                (Some((ax, ay)), Some((bx, by))) => {
                    cmp_spatial((ax.value(), ay.value()), (bx.value(), by.value()))
                }
            },
            other => Some(other),
        },
        _ => None,
    }
}

/// Spatial positions compare top to bottom, then left to right.
fn cmp_spatial(a: (f64, f64), b: (f64, f64)) -> Option<Ordering> {
    match a.1.partial_cmp(&b.1)? {
        Ordering::Equal => a.0.partial_cmp(&b.0),
        other => Some(other),
    }
}
