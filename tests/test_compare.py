"""tests/compare.py: the one comparator of the tests and the op dashboard."""

import numpy as np
import pytest

from tests.compare import assert_close, mismatch

F = np.array([1.0, -2.0, 0.5], np.float32)


def test_integers_bools_and_strings_are_exact():
    i = np.array([1, 2, -7], np.int8)
    assert mismatch([i], [i.copy()], rtol=1, atol=1) is None  # tolerances never apply to integers
    msg = mismatch([i], [np.array([1, 3, -7], np.int8)], atol=5)
    assert msg.startswith("output 0: 1/3 elements differ (max |diff| 1)")
    assert "index (1,): ours 2, reference 3" in msg
    assert "(max |diff| 255)" in mismatch([np.array([0], np.uint8)], [np.array([255], np.uint8)])  # no wrap
    assert "1/2 elements differ" in mismatch([np.array([True, False])], [np.array([True, True])])
    s = np.array([b"a", b"bc"], dtype=object)
    assert mismatch([s], [s.copy()]) is None
    msg = mismatch([s], [np.array([b"a", b"b"], dtype=object)])
    assert msg.startswith("output 0: strings differ") and "index (1,): b'bc', reference b'b'" in msg


def test_shapes_dtypes_and_output_counts_must_match():
    i = np.array([1, 2], np.int8)
    assert "dtype int8, reference int16" in mismatch([i], [i.astype(np.int16)])
    assert "shape [2], reference [1]" in mismatch([i], [i[:1]])
    assert "1 outputs, the reference gives 2" in mismatch([i], [i, i])
    assert "dtype" in mismatch([F], [F.astype(np.float64)], rtol=1)


def test_floats_default_to_exact():
    assert mismatch([F], [F.copy()]) is None
    assert mismatch([np.float32(0.0)], [np.float32(-0.0)]) is None  # equal values
    assert "max |diff|" in mismatch([F], [np.nextafter(F, np.float32(np.inf))])


def test_rtol_is_relative_to_the_largest_finite_reference_magnitude():
    ref = np.array([100.0, 1e-3, np.inf], np.float32)
    ours = ref + np.array([0, 9e-4, 0], np.float32)  # 90% of a tiny element, 9e-6 of the output's scale
    assert mismatch([ours], [ref], rtol=1e-5) is None
    msg = mismatch([ours], [ref], rtol=1e-6, atol=1e-6)
    assert msg.startswith("output 0: max |diff| 0.0009 (tolerance 0.000101)")
    assert "worst at index (1,)" in msg and "max|ref| 100" in msg


def test_rtol_each_is_relative_to_each_element():
    ref = np.array([1e30, 1e-30, 0.0], np.float32)
    ours = (ref * np.float32(1 + 2e-6)).astype(np.float32)
    assert mismatch([ours], [ref], rtol_each=1e-5) is None
    ours[1] *= np.float32(1.001)
    msg = mismatch([ours], [ref], rtol_each=1e-5)
    assert msg.startswith("output 0: 1/3 elements beyond tolerance") and "index (1,)" in msg
    assert mismatch([ours], [ref], rtol=1e-5) is None  # what the output's scale alone would let through


def test_atol_adds():
    assert mismatch([F + np.float32(1e-3)], [F], atol=2e-3) is None
    assert mismatch([F + np.float32(1e-3)], [F], atol=1e-4) is not None


def test_atol_per_element():
    ref = np.array([1.0, 1e-30, 5.0], np.float32)
    ours = np.array([1.0, 3e-30, 5.5], np.float32)
    atol = np.array([0.0, 3e-30, 0.5])
    assert mismatch([ours], [ref], atol=atol) is None
    why = mismatch([ours], [ref], atol=np.array([0.0, 1e-30, 0.5]))
    assert why is not None and "index (1,)" in why and "1/3 elements" in why


def test_nan_and_infinities_must_be_where_the_reference_has_them():
    ref = np.array([np.nan, np.inf, -np.inf, 1.0], np.float32)
    assert mismatch([ref.copy()], [ref], rtol=1) is None
    for k, v in ((0, 1.0), (1, -np.inf), (2, 1.0), (3, np.nan), (3, np.inf)):
        ours = ref.copy()
        ours[k] = v
        msg = mismatch([ours], [ref], rtol=1e9, atol=1e9)
        assert msg is not None and f"index ({k},)" in msg, (k, v, msg)
    assert mismatch([np.full(2, np.nan, np.float32)], [np.full(2, np.nan, np.float32)]) is None  # no finite ref


def test_complex():
    c = np.array([1 + 1j, -2j], np.complex64)
    assert mismatch([c + np.complex64(1e-7)], [c], rtol=1e-5) is None
    assert "max |diff|" in mismatch([c + np.complex64(1e-3j)], [c], rtol=1e-5)


def test_one_line_notes_for_the_dashboard():
    msg = mismatch([np.array([1, 2], np.int8)], [np.array([1, 3], np.int8)], where=False)
    assert msg == "output 0: 1/2 elements differ (max |diff| 1)"
    msg = mismatch([F + np.float32(0.25)], [F], atol=0.0, where=False)
    assert msg == "output 0: max |diff| 0.25 (tolerance 0)"


def test_assert_close_raises_with_the_difference():
    assert_close([F], [F.copy()])
    with pytest.raises(AssertionError, match=r"invoke 3: output 0: max \|diff\| 0.5 .* index \(2,\)"):
        assert_close([F + np.array([0, 0, 0.5], np.float32)], [F], rtol=1e-5, err_msg="invoke 3")
