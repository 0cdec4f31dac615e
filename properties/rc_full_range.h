// Generators that draw over the whole range at every RapidCheck size (properties/README.md).
//
// RapidCheck's rc::gen::inRange and rc::gen::arbitrary scale their range with the case's size
// (0 .. max_size, growing over the run): at size 0 inRange(a, b) returns a; inRange(-8, 8) gives
// no positive value below size 50; arbitrary<std::uint8_t>() stays at or below 0x7f below size
// 90. A property that runs a handful of cases therefore rarely reaches the top of a range (the
// corners that break code). These wrappers fix the size at rc::kNominalSize, where both draw
// uniformly over the whole range, and keep RapidCheck's shrinking (towards `min`, resp. 0).
#pragma once

#include <rapidcheck.h>

namespace lockstep::rcfull {

/// Uniform over [min, max) at every size; shrinks towards `min`. Throws rc::GenerationFailure
/// when max <= min (as rc::gen::inRange).
template <class T>
rc::Gen<T> in_range(T min, T max) {
  return rc::gen::resize(rc::kNominalSize, rc::gen::inRange<T>(min, max));
}

/// Any value of the integral type T, uniform over all its values at every size; shrinks
/// towards 0.
template <class T>
rc::Gen<T> any() {
  return rc::gen::resize(rc::kNominalSize, rc::gen::arbitrary<T>());
}

}  // namespace lockstep::rcfull
