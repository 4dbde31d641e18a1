"""Plots: one curve per plugin against a log-2 size axis, in PNG, SVG and self-contained HTML."""

import importlib.util
import re
import sys
import xml.etree.ElementTree as ET

import pytest

from conftest import FAST
from pytest_qcrypto.output import plot
from pytest_qcrypto.measure.harness import Measurement
from pytest_qcrypto.output.render import FAILED, Cell, Changes, Table
from pytest_qcrypto.algorithms.settings import SettingsError

pytest.importorskip("matplotlib", reason="the plot extra: pip install matplotlib")

SVG = "{http://www.w3.org/2000/svg}"
BLUE, ORANGE = (0x1F, 0x77, 0xB4), (0xFF, 0x7F, 0x0E)  # matplotlib's first two line colours


def m(plugin, size, kib_per_s, alg="sha256", direction="digest"):
    """A measurement of ``kib_per_s`` (1000 operations)."""
    return Measurement(alg, plugin, size, direction, 1000, (1000 * size / 1024 / kib_per_s,))


def sha256(plugins=("openssl", "pycryptodome")):
    sizes = (16, 64, 1024, 16384)
    cells = {(p, s): Cell(m(p, s, (i + 1) * 1000 + s)) for i, p in enumerate(plugins)
             for s in sizes}
    return Table("sha256", "digest", "digest", tuple(plugins), sizes, cells)


def aes():
    cells = {("openssl", 16): Cell(m("openssl", 16, 900, "aes-128-cbc", "decrypt")),
             ("openssl", 64): Cell(None, FAILED, "wrong answer")}
    return Table("aes-128-cbc", "cipher", "decrypt", ("openssl",), (16, 64), cells)


def test_figure_has_a_panel_per_table_and_a_line_per_plugin():
    fig = plot.figure([sha256(), aes()], "MB/s")
    first, second = fig.axes
    assert [line.get_label() for line in first.lines] == ["openssl", "pycryptodome"]
    assert list(first.lines[0].get_xdata()) == [16, 64, 1024, 16384]
    assert first.get_xscale() == "log" and first.xaxis.get_transform().base == 2
    assert [t.get_text() for t in first.get_xticklabels()] == ["16", "64", "1024", "16384"]
    assert first.get_xlabel() == "buffer size (bytes)"
    assert first.get_ylabel() == "throughput (MB/s, 1 MB = 1000000 bytes)"
    assert first.get_title() == "sha256"
    assert second.get_title() == "aes-128-cbc, decrypt"
    assert list(second.lines[0].get_xdata()) == [16]  # the failed cell is not a point


def test_values_are_in_the_unit():
    fig = plot.figure([sha256(["openssl"])], "KiB/s")
    assert list(fig.axes[0].lines[0].get_ydata()) == pytest.approx([1016, 1064, 2024, 17384])


def test_time_per_operation_has_a_log_axis():
    ax = plot.figure([sha256()], "ns/op").axes[0]
    assert ax.get_yscale() == "log"
    assert ax.get_ylabel() == "time per operation (ns/op)"


def test_baseline_is_dashed_in_the_colour_of_its_plugin():
    now, then = sha256(), sha256()
    ax = plot.figure([now], baseline=[then]).axes[0]
    lines = {line.get_label(): line for line in ax.lines}
    assert lines["openssl (baseline)"].get_linestyle() == "--"
    assert lines["openssl (baseline)"].get_color() == lines["openssl"].get_color()
    assert lines["openssl"].get_linestyle() == "-"


def coloured(pixels, rgb, tolerance=0.08):
    """How many pixels are close to ``rgb`` (0-255)."""
    target = [c / 255 for c in rgb]
    return int(sum(1 for row in pixels for px in row
                   if all(abs(px[i] - target[i]) < tolerance for i in range(3))))


def test_png_has_the_figure_size_and_a_curve_per_plugin(tmp_path):
    import matplotlib.image

    path = plot.write(tmp_path / "speed.png", [sha256()])
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    pixels = matplotlib.image.imread(path)
    height, width = pixels.shape[:2]
    assert (width, height) == (640, 360)  # one panel of 6.4 x 3.6 inches at 100 dpi
    inside = pixels[40:320, 80:620]  # within the axes: the curves, not only the frame
    assert coloured(inside, BLUE) > 200
    assert coloured(inside, ORANGE) > 200


def test_png_of_one_plugin_has_one_curve(tmp_path):
    import matplotlib.image

    pixels = matplotlib.image.imread(plot.write(tmp_path / "one.png", [sha256(["hashlib"])]))
    assert coloured(pixels, BLUE) > 200
    assert coloured(pixels, ORANGE) == 0


def svg_lines(text):
    root = ET.fromstring(text)
    return root, {g.get("id") for g in root.iter(f"{SVG}g") if g.get("id", "").startswith("qcrypto-")}


def test_svg_has_an_element_per_curve(tmp_path):
    path = plot.write(tmp_path / "speed.svg", [sha256(), aes()], baseline=[sha256()])
    root, ids = svg_lines(path.read_text())
    assert ids == {"qcrypto-sha256-digest-openssl", "qcrypto-sha256-digest-pycryptodome",
                   "qcrypto-sha256-digest-openssl-baseline",
                   "qcrypto-sha256-digest-pycryptodome-baseline",
                   "qcrypto-aes-128-cbc-decrypt-openssl"}
    axes = [g for g in root.iter(f"{SVG}g") if re.fullmatch(r"axes_\d+", g.get("id", ""))]
    assert len(axes) == 2
    assert root.get("width").endswith("pt")


def test_html_is_self_contained(tmp_path):
    path = plot.write(tmp_path / "speed.html", [sha256()], text=["a <table> & more"])
    page = path.read_text()
    assert page.startswith("<!DOCTYPE html>")
    assert page.count("<svg") == 1
    assert "<pre>a &lt;table&gt; &amp; more</pre>" in page
    for outside in ("<script", "<link", "<img", "src=", "@import"):
        assert outside not in page
    assert not re.search(r"url\((?!#)", page)  # only references within the page: url(#clip)
    # the only addresses are the SVG namespace names, which nothing fetches
    assert set(re.findall(r"https?://[^\"' )]+", page)) <= {
        "http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink"}
    svg = page[page.index("<svg"):page.index("</svg>") + len("</svg>")]
    _, ids = svg_lines(svg)
    assert ids == {"qcrypto-sha256-digest-openssl", "qcrypto-sha256-digest-pycryptodome"}


def test_unknown_suffix_and_nothing_to_plot(tmp_path):
    with pytest.raises(plot.PlotError, match="unknown plot suffix"):
        plot.write(tmp_path / "speed.pdf", [sha256()])
    with pytest.raises(plot.PlotError, match="no results to plot"):
        plot.write(tmp_path / "speed.png", [])


def without_matplotlib(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "matplotlib" else real(name, *a))
    for name in {"matplotlib", "matplotlib.figure",
                 *(n for n in sys.modules if n.startswith("matplotlib."))}:
        monkeypatch.setitem(sys.modules, name, None)  # an import of it raises ImportError


HINT = "pip install matplotlib (or, from a clone, pip install '.[plot]')"


def test_the_install_hint_works_from_a_clone_and_from_a_wheel():
    # issue 28: it said pip install 'pytest-qcrypto[plot]', which fails (not on PyPI); the
    # hint is right only while the plot extra is matplotlib alone
    import tomllib
    from pathlib import Path
    assert plot.INSTALL_HINT == HINT
    pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
    extras = tomllib.loads(pyproject.read_text())["project"]["optional-dependencies"]
    assert [re.split(r"[<>=!~ ;\[]", d)[0] for d in extras["plot"]] == ["matplotlib"]
    from pytest_qcrypto.pytest_side import options
    (plot_option,) = [o for o in options.OPTIONS if o.flag == "--qcrypto-plot"]
    assert HINT in plot_option.help_text() and "pytest-qcrypto[" not in plot_option.help_text()


def test_without_matplotlib_the_message_names_the_extra(monkeypatch):
    without_matplotlib(monkeypatch)
    with pytest.raises(SettingsError, match=re.escape(HINT)):
        plot.check_path("speed.png")
    with pytest.raises(plot.PlotError, match=re.escape(HINT)):
        plot.figure([sha256()])


# -- through pytest ----------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["out.png", "out.svg", "out.html"])
def test_plot_option_writes_the_file(pytester, name):
    (pytester.path / "plots").mkdir()
    r = pytester.runpytest("--qcrypto-digest", "sha256", "--qcrypto-plugin", "openssl",
                           "--qcrypto-plugin", "hashlib", "--qcrypto-size", "16,64",
                           "--qcrypto-plot", f"plots/{name}", *FAST)
    assert r.ret == 0
    assert f"qcrypto: plot written to {pytester.path / 'plots' / name}" in r.outlines
    data = (pytester.path / "plots" / name).read_bytes()
    if name.endswith(".png"):
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
    else:
        assert b'id="qcrypto-sha256-digest-openssl"' in data
        assert b'id="qcrypto-sha256-digest-hashlib"' in data


def test_plot_option_draws_the_compared_baseline(pytester):
    args = ("--qcrypto-digest", "sha256", "--qcrypto-plugin", "hashlib", "--qcrypto-size", "64")
    assert pytester.runpytest(*args, "--qcrypto-save", "base.json", *FAST).ret == 0
    pytester.runpytest(*args, "--qcrypto-compare", "base.json", "--qcrypto-plot", "cmp.svg", *FAST)
    _, ids = svg_lines((pytester.path / "cmp.svg").read_text())
    assert ids == {"qcrypto-sha256-digest-hashlib", "qcrypto-sha256-digest-hashlib-baseline"}


def test_bad_plot_path_is_a_usage_error(pytester):
    r = pytester.runpytest("--qcrypto-digest", "sha256", "--qcrypto-plot", "out.jpg")
    assert r.ret == 4
    r.stderr.fnmatch_lines(["ERROR: --qcrypto-plot: 'out.jpg' must end in .png, .svg or .html"])


def test_missing_matplotlib_is_a_usage_error_naming_the_extra(pytester, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "matplotlib" else real(name, *a))
    r = pytester.runpytest("--qcrypto-digest", "sha256", "--qcrypto-plot", "out.png")
    assert r.ret == 4
    assert ("ERROR: --qcrypto-plot needs matplotlib, which is not installed: "
            "pip install matplotlib (or, from a clone, pip install '.[plot]')") in r.stderr.str()


def broken_matplotlib(pytester, monkeypatch):
    """A ``matplotlib`` package first on PYTHONPATH that fails to import, as one whose shared
    library is missing does."""
    broken = pytester.path / "broken" / "matplotlib"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text('raise ImportError("libfoo.so missing")\n')
    monkeypatch.setenv("PYTHONPATH", str(broken.parent))


def test_a_matplotlib_that_fails_to_import_is_a_usage_error_before_measuring(pytester,
                                                                           monkeypatch):
    broken_matplotlib(pytester, monkeypatch)
    r = pytester.run(sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *RUN,
                     "--qcrypto-plot", "out.svg", timeout=120)
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    assert [line for line in r.errlines if line] == [
        "ERROR: --qcrypto-plot needs matplotlib, which is installed but failed to import: "
        "ImportError: libfoo.so missing (reinstall it: pip install matplotlib (or, from a clone, pip install '.[plot]'))"]
    assert "Benchmark results" not in r.stdout.str() and "passed" not in r.stdout.str()
    assert not (pytester.path / "out.svg").exists()


def test_report_with_a_matplotlib_that_fails_to_import_is_a_usage_error(pytester, monkeypatch):
    assert pytester.runpytest(*RUN, "--qcrypto-save", "one.json").ret == 0
    broken_matplotlib(pytester, monkeypatch)
    r = qcrypto_report(pytester, "one.json", "--qcrypto-plot", "report.png")
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    assert r.outlines == []  # no table printed before the error
    assert r.errlines == ["ERROR: --qcrypto-plot needs matplotlib, which is installed but "
                          "failed to import: ImportError: libfoo.so missing (reinstall it: "
                          "pip install matplotlib (or, from a clone, pip install '.[plot]'))"]


# -- where a plot cannot go: a usage error up front, or exit 1 at the end ---------------------

RUN = ("--qcrypto-digest", "sha256", "--qcrypto-plugin", "hashlib", "--qcrypto-size", "16", *FAST)


@pytest.mark.parametrize("where, message", [
    ("no-such-dir/out.png", "cannot write no-such-dir/out.png: directory {dir}/no-such-dir "
                            "does not exist"),
    ("a-file/out.png", "cannot write a-file/out.png: {dir}/a-file is a file, not a directory"),
    ("a-file/deeper/out.svg", "cannot write a-file/deeper/out.svg: {dir}/a-file is a file, "
                              "not a directory"),
    ("a-dir.png", "cannot write a-dir.png: a-dir.png is a directory, not a regular file"),
    ("a-dir", "'a-dir' must end in .png, .svg or .html"),
], ids=["missing-directory", "file-as-directory", "file-above-directory", "a-directory",
        "a-directory-without-suffix"])
def test_a_plot_path_that_cannot_be_written_is_a_usage_error(pytester, where, message):
    (pytester.path / "a-file").write_text("kept")
    (pytester.path / "a-dir.png").mkdir()
    (pytester.path / "a-dir").mkdir()
    r = pytester.runpytest(*RUN, "--qcrypto-plot", where)
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    assert r.stderr.lines[0] == "ERROR: --qcrypto-plot: " + message.format(dir=pytester.path)
    assert "passed" not in r.stdout.str()  # nothing ran
    assert not (pytester.path / "no-such-dir").exists()  # a mistyped directory is not made
    assert (pytester.path / "a-file").read_text() == "kept"
    assert "Traceback" not in r.stdout.str() + r.stderr.str()


def test_a_file_as_directory_in_an_absolute_path_is_named(pytester):
    (pytester.path / "a-file").write_text("kept")
    where = pytester.path / "a-file" / "out.html"
    r = pytester.runpytest(*RUN, f"--qcrypto-plot={where}")
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    assert r.stderr.lines[0] == (f"ERROR: --qcrypto-plot: cannot write {where}: "
                                 f"{pytester.path / 'a-file'} is a file, not a directory")


BLOCK_PLOT = '''
from pathlib import Path

def pytest_runtest_teardown(item):
    Path("out.png").mkdir(exist_ok=True)
'''


def test_a_plot_that_fails_at_the_end_exits_1_with_an_error_line(pytester):
    pytester.makeconftest(BLOCK_PLOT)
    r = pytester.runpytest(*RUN, "--qcrypto-plot", "out.png")
    assert r.ret == pytest.ExitCode.TESTS_FAILED
    r.assert_outcomes(passed=1)
    assert (f"ERROR: qcrypto: could not write the plot: {pytester.path / 'out.png'} is a "
            "directory, not a regular file") in r.outlines
    assert "Traceback" not in r.stdout.str() + r.stderr.str()
    assert "INTERNALERROR" not in r.stdout.str() + r.stderr.str()


def test_a_full_disk_at_the_end_exits_1_and_keeps_the_old_plot(pytester, monkeypatch):
    def full(fd):
        raise OSError(28, "No space left on device")

    (pytester.path / "out.svg").write_text("the old plot")
    monkeypatch.setattr(plot.files.os, "fsync", full)  # the disk fills while writing
    r = pytester.runpytest(*RUN, "--qcrypto-plot", "out.svg")
    assert r.ret == pytest.ExitCode.TESTS_FAILED
    assert (f"ERROR: qcrypto: could not write the plot to {pytester.path / 'out.svg'}: "
            "No space left on device") in r.outlines
    assert (pytester.path / "out.svg").read_text() == "the old plot"  # never half a plot
    assert not [line for line in r.outlines if "plot written" in line]
    assert sorted(p.name for p in pytester.path.glob(".out.svg*")) == []


def test_a_run_that_measured_nothing_writes_no_plot(pytester):
    r = pytester.runpytest(*RUN, "-k", "nothing-matches", "--qcrypto-plot", "out.png")
    assert r.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    assert (f"qcrypto: nothing was measured: {pytester.path / 'out.png'} not written"
            in r.outlines)
    assert not (pytester.path / "out.png").exists()


def qcrypto_report(pytester, *args):
    return pytester.run(sys.executable, "-m", "pytest_qcrypto.commands.qcrypto", "report", *args)


def test_report_plot_path_that_cannot_be_written_is_a_usage_error(pytester):
    r = pytester.runpytest(*RUN, "--qcrypto-save", "one.json")
    assert r.ret == 0
    r = qcrypto_report(pytester, "one.json", "--qcrypto-plot", "no-such-dir/report.svg")
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    assert r.outlines == []  # nothing printed, nothing half done
    assert r.errlines == [f"ERROR: --qcrypto-plot: cannot write no-such-dir/report.svg: "
                          f"directory {pytester.path / 'no-such-dir'} does not exist"]


def test_report_plot_that_fails_at_the_end_exits_1(pytester, monkeypatch, capsys):
    from pytest_qcrypto.commands import qcrypto as cli

    r = pytester.runpytest(*RUN, "--qcrypto-save", "one.json")
    assert r.ret == 0
    capsys.readouterr()

    def full(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(plot.files.os, "fsync", full)  # the disk fills while writing
    where = pytester.path / "report.png"
    assert cli.main(["report", str(pytester.path / "one.json"), f"--qcrypto-plot={where}"]) == 1
    out, err = capsys.readouterr()
    assert out.startswith("Benchmark results for 'sha256' digest (KiB/s):")  # the tables stay
    assert err == f"ERROR: qcrypto: could not write the plot to {where}: No space left on device\n"


# -- several plots -------------------------------------------------------------------------

def test_every_plot_path_is_written_each_in_the_format_of_its_suffix(pytester):
    (pytester.path / "plots").mkdir()
    r = pytester.runpytest(*RUN, "--qcrypto-plot", "plots/a.png", "--qcrypto-plot=plots/b.svg",
                           "--qcrypto-plot", "plots/c.html", "--qcrypto-plot", "plots/b.svg")
    assert r.ret == 0, r.stdout.str()
    written = [line for line in r.outlines if line.startswith("qcrypto: plot written to ")]
    assert written == [f"qcrypto: plot written to {pytester.path / 'plots' / name}"
                       for name in ("a.png", "b.svg", "c.html")]  # b.svg once
    assert (pytester.path / "plots" / "a.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (pytester.path / "plots" / "b.svg").read_text().startswith("<?xml")
    assert (pytester.path / "plots" / "c.html").read_text().startswith("<!DOCTYPE html>")


@pytest.mark.parametrize("first, message", [
    ("speed.jpg", "ERROR: --qcrypto-plot: 'speed.jpg' must end in .png, .svg or .html"),
    ("no-such-dir/b.svg", "ERROR: --qcrypto-plot: cannot write no-such-dir/b.svg: directory "
                          "{dir}/no-such-dir does not exist"),
])
def test_every_plot_path_is_checked_before_measuring(pytester, first, message):
    r = pytester.runpytest(*RUN, "--qcrypto-plot", first, "--qcrypto-plot", "a.svg")
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    assert message.format(dir=pytester.path) in r.errlines
    assert not (pytester.path / "a.svg").exists()


def test_qcrypto_speed_and_report_write_every_plot(pytester):
    r = pytester.run(sys.executable, "-m", "pytest_qcrypto.commands.qcrypto", "speed", "-D", "sha256",
                     "-P", "hashlib", "--qcrypto-size", "16", "--qcrypto-min-time", "0.001",
                     "--qcrypto-rounds", "1", "--qcrypto-save", "one.json", "--qcrypto-plot",
                     "s.svg", "--qcrypto-plot", "s.png", timeout=300)
    assert r.ret == 0, r.stderr.str()
    assert (pytester.path / "s.svg").stat().st_size and (pytester.path / "s.png").stat().st_size
    r = qcrypto_report(pytester, "one.json", "--qcrypto-plot", "r.html", "--qcrypto-plot",
                       "r.svg")
    assert r.ret == 0, r.stderr.str()
    assert r.errlines == [f"qcrypto: plot written to {pytester.path / name}"
                          for name in ("r.html", "r.svg")]
    assert "<svg" in (pytester.path / "r.html").read_text()
    assert (pytester.path / "r.svg").read_text().startswith("<?xml")


# -- log axis, spread, regressions: read back from the saved SVG's elements ------------------

def decades(plugin="openssl", spread=2.0):
    """sha256 at 1000, 10000, 100000 and 1000000 KiB/s (a factor 10 per size), each with a
    fastest round ``spread`` times faster and a slowest ``spread`` times slower than the median."""
    sizes = (16, 64, 1024, 16384)
    cells = {}
    for size, kib in zip(sizes, (1e3, 1e4, 1e5, 1e6)):
        median = 1000 * size / 1024 / kib
        cells[(plugin, size)] = Cell(Measurement("sha256", plugin, size, "digest", 1000,
                                                 (median / spread, median, median * spread)))
    return Table("sha256", "digest", "digest", (plugin,), sizes, cells)


def group(root, gid):
    found = [g for g in root.iter(f"{SVG}g") if g.get("id") == gid]
    assert len(found) == 1, gid
    return found[0]


def markers(root, gid):
    """(x, y) of each marker drawn in the SVG group ``gid``."""
    return [(float(u.get("x")), float(u.get("y"))) for u in group(root, gid).iter(f"{SVG}use")]


def segments(root, gid):
    """((x0, y0), (x1, y1)) of each two-point path in the SVG group ``gid``."""
    out = []
    for path in group(root, gid).iter(f"{SVG}path"):
        numbers = [float(n) for n in re.findall(r"-?\d+(?:\.\d+)?", path.get("d"))]
        assert len(numbers) == 4, path.get("d")
        out.append(((numbers[0], numbers[1]), (numbers[2], numbers[3])))
    return out


def test_throughput_axis_is_log_in_the_svg(tmp_path):
    path = plot.write(tmp_path / "log.svg", [decades()])
    root = ET.fromstring(path.read_text())
    points = markers(root, "qcrypto-sha256-digest-openssl")
    ys = [y for _, y in points]
    steps = [a - b for a, b in zip(ys, ys[1:])]  # each tenfold step is the same height
    assert len(steps) == 3 and min(steps) > 20
    assert max(steps) - min(steps) < 0.01 * max(steps)  # on a linear axis: 0.9, 9, 90 units
    # the value ticks are labelled in powers of ten (matplotlib keeps each text as a comment)
    commented = ET.fromstring(path.read_text(),
                              parser=ET.XMLParser(target=ET.TreeBuilder(insert_comments=True)))
    ticks = [g for g in commented.iter(f"{SVG}g") if re.fullmatch(r"ytick_\d+", g.get("id", ""))]
    labels = {c.text.strip() for g in ticks for c in g.iter(ET.Comment)}
    assert {r"$\mathdefault{10^{4}}$", r"$\mathdefault{10^{5}}$"} <= labels


@pytest.mark.parametrize("unit", ["KiB/s", "MB/s", "ops/s", "ns/op"])
def test_every_unit_has_a_log_value_axis(unit):
    assert plot.figure([sha256()], unit).axes[0].get_yscale() == "log"


def test_each_point_has_an_error_bar_from_its_fastest_to_its_slowest_round(tmp_path):
    root = ET.fromstring(plot.write(tmp_path / "spread.svg", [decades(spread=2.0)]).read_text())
    points = markers(root, "qcrypto-sha256-digest-openssl")
    bars = segments(root, "spread-sha256-digest-openssl")
    assert len(bars) == len(points) == 4
    decade = points[0][1] - points[1][1]  # the height of a factor 10
    for (x, y), ((x0, y0), (x1, y1)) in zip(points, bars):
        assert x0 == x1 == pytest.approx(x)  # a vertical bar through the point
        # from half the median's throughput (slowest round) to twice it (fastest): log10(2) of
        # a decade on either side of the point
        assert sorted((y0 - y, y1 - y)) == pytest.approx([-0.30103 * decade, 0.30103 * decade],
                                                         abs=0.01)


def test_spread_is_in_the_unit_and_absent_without_rounds():
    one_round = Table("sha256", "digest", "digest", ("openssl",), (64,),
                      {("openssl", 64): Cell(m("openssl", 64, 500))})
    fig = plot.figure([decades(spread=4.0), one_round], "ns/op")
    bars = [c for c in fig.axes[0].collections if c.get_gid() == "spread-sha256-digest-openssl"]
    (segment, *_) = bars[0].get_segments()
    median_ns = 1000 * 16 / 1024 / 1e3 / 1000 * 1e9  # 16 B at 1000 KiB/s, per operation
    assert sorted(segment[:, 1]) == pytest.approx([median_ns / 4, median_ns * 4])
    assert not fig.axes[1].collections  # one round: no spread to show


def grid(texts, plugins=("openssl",), sizes=(16, 64, 1024, 16384)):
    full = {(p, s): "-" for p in plugins for s in sizes} | texts
    return {("sha256", "digest"): Changes("Change against baseline b.json (negative = slower):",
                                          tuple(plugins), tuple(sizes), full)}


def test_regressions_are_ringed_at_their_points_and_nothing_else(tmp_path):
    changes = grid({("openssl", 64): "-42.0%!", ("openssl", 1024): "-30.0%~",
                    ("openssl", 16): "+3.0%", ("openssl", 16384): "new"})
    path = plot.write(tmp_path / "reg.svg", [decades()], baseline=[decades()], changes=changes)
    root = ET.fromstring(path.read_text())
    points = dict(markers(root, "qcrypto-sha256-digest-openssl"))
    rings = markers(root, "regression-sha256-digest-openssl")
    x64 = sorted(points)[1]
    assert rings == [pytest.approx((x64, points[x64]))]  # at the 64-byte point, the noisy one not
    ax = plot.figure([decades()], changes=changes).axes[0]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["openssl", "regression"]


def test_without_regressions_there_is_no_mark(tmp_path):
    for changes in (None, grid({("openssl", 64): "-4.0%"}), {("sha256", "digest"): ["lines"]}):
        text = plot.write(tmp_path / "none.svg", [decades()], changes=changes).read_text()
        assert 'id="regression-' not in text


def test_a_compared_run_rings_its_regressions_in_both_plots(pytester):
    """Two --qcrypto-plot paths (the same name, two formats): both written, from the gate's
    verdicts (a baseline made ten times faster at 16 bytes)."""
    import json

    args = ("--qcrypto-digest", "sha256", "--qcrypto-plugin", "hashlib", "--qcrypto-size",
            "16,1024", "--qcrypto-rounds", "3", "--qcrypto-min-time", "0.005")
    assert pytester.runpytest(*args, "--qcrypto-save", "base.json").ret == 0
    saved = json.loads((pytester.path / "base.json").read_text())
    for result in saved["results"]:
        if result["size"] == 16:
            result["rounds_s"] = [s / 10 for s in result["rounds_s"]]
            result["cpu_s"] = [s / 10 for s in result["cpu_s"]]
            result["bytes_per_second"] *= 10
    (pytester.path / "base.json").write_text(json.dumps(saved))
    r = pytester.runpytest(*args, "--qcrypto-compare=base.json", "--qcrypto-plot", "a.png",
                           "--qcrypto-plot", "a.svg")
    assert r.ret == pytest.ExitCode.TESTS_FAILED  # the 16-byte cell regressed
    assert [line for line in r.outlines if "plot written" in line] == [
        f"qcrypto: plot written to {pytester.path / name}" for name in ("a.png", "a.svg")]
    assert (pytester.path / "a.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    root = ET.fromstring((pytester.path / "a.svg").read_text())
    points = markers(root, "qcrypto-sha256-digest-hashlib")
    rings = markers(root, "regression-sha256-digest-hashlib")
    # the 16-byte cell is ringed; on a busy shared machine the 1024-byte one may regress too,
    # and then it is ringed at its own point, never elsewhere
    assert rings[0] == pytest.approx(points[0]) and len(rings) <= 2
    assert all(ring == pytest.approx(point) for ring, point in zip(rings, points))
    assert len(rings) == 1 or "sha256 hashlib 1024 B digest" in r.stdout.str()
    assert len(segments(root, "spread-sha256-digest-hashlib")) == 2
