"""The claims catalogue (harness/claims.json) and the verdict rules it states, on small hand-made
run files with known answers."""
import json
import os
import unittest

from helpers import REPO, tmpdir
from pairbench_report import claims
from pairbench_report.runfile import RunFile

CATALOGUE = os.path.join(REPO, "harness", "claims.json")


def make_run(experiments, environment=None):
    return RunFile("test.json", {"benchmarks": [], "pairbench": {"environment": environment or {},
                                                                  "experiments": experiments}})


def point(params, ratios, arms=None, exp="x.y"):
    names = [("base", "baseline")] + [(t, "treatment") for t, *_ in ratios]
    arms = arms or [{"arm": a, "role": role, "verification": "passed", "median": 1.0,
                     "benchmark": f"{exp}/{a}/" + "/".join(f"{k}:{v}" for k, v in params.items())}
                    for a, role in names]
    return {"params": params, "arms": arms,
            "ratios": [{"treatment": t, "ratio": r, "ci_low": lo, "ci_high": hi, "confidence": 0.95}
                       for t, r, lo, hi in ratios]}


def unsupported_point(exp, reason):
    """A grid point whose baseline and treatment could not run here, for `reason`."""
    arms = [{"arm": a, "role": role, "verification": "not_supported", "reason": reason,
             "benchmark": f"{exp}/{a}/device:cuda"} for a, role in (("base", "baseline"), ("t", "treatment"))]
    return {"params": {"device": "cuda"}, "arms": arms, "ratios": []}


def experiment(name, claim, points):
    return {"name": name, "claim": claim, "kind": "comparison", "metric": "ns_per_op", "unit": "ns",
            "better": "lower", "points": points}


def catalogue(checks, kind="ratio", experiments=()):
    return {"claims": [{"id": "C99", "claim": "test claim", "experiments": list(experiments),
                        "verdict": {"kind": kind, "checks": checks}}]}


def judge(cat, run):
    return claims.judge_all(cat, run)[0]


class Catalogue(unittest.TestCase):
    def test_every_claim_is_there_with_its_fields(self):
        doc = claims.load_claims(CATALOGUE)
        ids = [c["id"] for c in doc["claims"]]
        self.assertEqual(ids, [f"C{n}" for n in range(1, 21)])
        for c in doc["claims"]:
            for field in ("claim", "seed", "section", "baseline_vs_treatment", "cpu", "gpu", "quoted_figures",
                          "experiments", "verdict"):
                self.assertIn(field, c, f"{c['id']} lacks {field}")
            self.assertIn(c["verdict"]["kind"], ("ratio", "environment", "limits"))
            for q in c["quoted_figures"]:
                self.assertIsInstance(q["text"], str)

    def test_quoted_figures_are_attached(self):
        doc = {c["id"]: c for c in claims.load_claims(CATALOGUE)["claims"]}
        text = {k: " ".join(q["text"] for q in c["quoted_figures"]) for k, c in doc.items()}
        self.assertIn("1.4076", text["C3"])
        self.assertIn("1.1700", text["C3"])
        self.assertIn("0.0155", text["C2"])
        self.assertIn("0.0727", text["C2"])
        self.assertIn("2.2001", text["C19"])
        self.assertIn("0.0039", text["C19"])
        self.assertIn("16×", text["C10"])
        self.assertIn("3–8×", text["C10"])
        self.assertIn("4–6×", text["C15"])
        self.assertIn("80 %", text["C18"])

    def test_current_experiments_are_named(self):
        doc = {c["id"]: c for c in claims.load_claims(CATALOGUE)["claims"]}
        for cid, name in (("C1", "dispatch.enqueue_vs_complete"), ("C2", "dispatch.barriers"),
                          ("C3", "dispatch.sync_vs_async"), ("C7", "dispatch.readback_in_loop")):
            self.assertIn(name, [e["name"] for e in doc[cid]["experiments"]])


class Rules(unittest.TestCase):
    def test_better_held_not_held_inconclusive(self):
        cat = catalogue([{"experiment": "x.y", "test": "better"}])
        held = make_run([experiment("x.y", "C99", [point({"n": "1"}, [("t", 2.0, 1.5, 2.5)])])])
        self.assertEqual(judge(cat, held)["verdict"], claims.HELD)
        worse = make_run([experiment("x.y", "C99", [point({"n": "1"}, [("t", 0.5, 0.4, 0.6)])])])
        self.assertEqual(judge(cat, worse)["verdict"], claims.NOT_HELD)
        wide = make_run([experiment("x.y", "C99", [point({"n": "1"}, [("t", 1.5, 0.7, 3.0)])])])
        self.assertEqual(judge(cat, wide)["verdict"], claims.INCONCLUSIVE)
        same = make_run([experiment("x.y", "C99", [point({"n": "1"}, [("t", 1.0, 0.995, 1.01)])])])
        self.assertEqual(judge(cat, same)["verdict"], claims.NOT_HELD)  # no meaningful difference

    def test_one_failing_point_decides(self):
        cat = catalogue([{"experiment": "x.y", "test": "better"}])
        run = make_run([experiment("x.y", "C99", [point({"n": "1"}, [("t", 2.0, 1.5, 2.5)]),
                                                  point({"n": "2"}, [("t", 0.5, 0.4, 0.6)])])])
        res = judge(cat, run)
        self.assertEqual(res["verdict"], claims.NOT_HELD)
        self.assertIn("held at 1 of 2", res["why"])
        self.assertIn("n:2", res["why"])

    def test_same_with_tolerance_and_where(self):
        cat = catalogue([{"experiment": "x.y", "test": "same", "tolerance": 1.25, "where": {"q": "0"}},
                         {"experiment": "x.y", "test": "better", "exclude": {"q": "0"}}])
        run = make_run([experiment("x.y", "C99", [point({"q": "0"}, [("t", 0.95, 0.9, 1.1)]),
                                                  point({"q": "9"}, [("t", 10.0, 8.0, 12.0)])])])
        self.assertEqual(judge(cat, run)["verdict"], claims.HELD)
        run = make_run([experiment("x.y", "C99", [point({"q": "0"}, [("t", 2.0, 1.6, 2.4)]),
                                                  point({"q": "9"}, [("t", 10.0, 8.0, 12.0)])])])
        self.assertEqual(judge(cat, run)["verdict"], claims.NOT_HELD)

    def test_treatment_filter(self):
        cat = catalogue([{"experiment": "x.y", "treatments": ["good"], "test": "better"}])
        run = make_run([experiment("x.y", "C99", [point({"n": "1"}, [("good", 2.0, 1.5, 2.5),
                                                                     ("other", 0.5, 0.4, 0.6)])])])
        self.assertEqual(judge(cat, run)["verdict"], claims.HELD)

    def test_plateau_of_ordered_treatments(self):
        cat = catalogue([{"experiment": "x.y", "test": "plateau", "treatments": ["w1", "w2", "w4"]}])
        # w4 no better than w1 (its upper bound 1.9 / w1's lower bound 1.85 < 1.05): more stopped helping.
        flat = [("w1", 1.9, 1.85, 1.95), ("w2", 1.95, 1.8, 2.1), ("w4", 1.8, 1.7, 1.9)]
        res = judge(cat, make_run([experiment("x.y", "C99", [point({"n": "1"}, flat)])]))
        self.assertEqual(res["verdict"], claims.HELD)
        self.assertIn("stopped helping by w1", res["measured"][0]["why"])
        # w4 clearly beats both w1 and w2: still helping.
        rising = [("w1", 1.5, 1.4, 1.6), ("w2", 2.0, 1.9, 2.1), ("w4", 3.0, 2.8, 3.2)]
        res = judge(cat, make_run([experiment("x.y", "C99", [point({"n": "1"}, rising)])]))
        self.assertEqual(res["verdict"], claims.NOT_HELD)
        # Wide intervals: neither.
        wide = [("w1", 1.5, 1.0, 2.0), ("w2", 1.6, 1.0, 2.2), ("w4", 1.7, 1.1, 2.4)]
        res = judge(cat, make_run([experiment("x.y", "C99", [point({"n": "1"}, wide)])]))
        self.assertEqual(res["verdict"], claims.INCONCLUSIVE)
        # A treatment that could not run makes the point not run here, with its reason.
        res = judge(cat, make_run([experiment("x.y", "C99", [point({"n": "1"}, flat[:2])])]))
        self.assertEqual(res["verdict"], claims.NOT_RUN)

    def test_plateau_needs_ordered_treatments(self):
        path = os.path.join(tmpdir(self), "claims.json")
        with open(path, "w") as f:
            json.dump(catalogue([{"experiment": "x.y", "test": "plateau", "treatments": ["w1"]}]), f)
        with self.assertRaisesRegex(Exception, r"treatments: 'plateau' needs at least two"):
            claims.load_claims(path)

    def test_not_run_here_with_reasons(self):
        cat = catalogue([{"experiment": "x.y", "test": "better"}])
        run = make_run([experiment("x.y", "C99", [unsupported_point("x.y", "RLIMIT_MEMLOCK is 8 MiB")])])
        res = judge(cat, run)
        self.assertEqual(res["verdict"], claims.NOT_RUN)
        self.assertIn("RLIMIT_MEMLOCK is 8 MiB", res["why"])

    def test_gpu_only_claim_is_not_testable_without_a_cuda_device(self):
        cat = catalogue([{"experiment": "x.y", "test": "better"}, {"experiment": "x.z", "test": "better"}])
        run = make_run([experiment("x.y", "C99", [unsupported_point("x.y", "no CUDA device")]),
                        experiment("x.z", "C99", [unsupported_point("x.z", "no CUDA device")])])
        res = judge(cat, run)
        self.assertEqual(res["verdict"], claims.NOT_TESTABLE)
        self.assertEqual(res["why"], "no CUDA device (x.y, x.z need one)")
        # One arm missing for another reason: not this machine's lack of a GPU alone, so not run here.
        run = make_run([experiment("x.y", "C99", [unsupported_point("x.y", "no CUDA device")]),
                        experiment("x.z", "C99", [unsupported_point("x.z", "RLIMIT_MEMLOCK is 8 MiB")])])
        self.assertEqual(judge(cat, run)["verdict"], claims.NOT_RUN)

    def test_cpu_analogue_rows_and_verdict_are_labelled_with_the_argument(self):
        argument = "resident pages stand in for pinned memory"
        cat = catalogue([{"experiment": "x.gpu", "test": "better"}, {"experiment": "x.cpu", "test": "better"}],
                        experiments=[{"name": "x.gpu"}, {"name": "x.cpu", "analogue": argument}])
        run = make_run([experiment("x.gpu", "C99", [unsupported_point("x.gpu", "no CUDA device")]),
                        experiment("x.cpu", "C99", [point({"n": "1"}, [("t", 2.0, 1.5, 2.5)], exp="x.cpu")])])
        res = judge(cat, run)
        self.assertEqual(res["verdict"], claims.HELD)
        self.assertTrue(res["analogue_only"])
        self.assertEqual(res["measured"][0]["analogue"], argument)
        self.assertTrue(res["why"].startswith(f"from a CPU analogue only ({argument}): held"), res["why"])
        # With a GPU row measured too, the verdict is no longer the analogue's alone.
        gpu = point({"device": "cuda"}, [("t", 3.0, 2.5, 3.5)], exp="x.gpu")
        run = make_run([experiment("x.gpu", "C99", [gpu]),
                        experiment("x.cpu", "C99", [point({"n": "1"}, [("t", 2.0, 1.5, 2.5)], exp="x.cpu")])])
        res = judge(cat, run)
        self.assertFalse(res["analogue_only"])
        self.assertEqual([m["analogue"] for m in res["measured"]], ["", argument])

    def test_an_experiment_of_another_claim_never_decides(self):
        # A check naming it (exact or glob) and the experiment's own claim field are both refused:
        # copy.stores (store types) once decided C6 (pinned vs pageable) by both routes.
        cat = catalogue([{"experiment": "x.y", "test": "better"}, {"experiment": "x.other", "test": "better"},
                         {"experiment": "x.n*", "test": "better"}], experiments=[{"name": "x.y"}])
        run = make_run([experiment("x.y", "C99", [point({"n": "1"}, [("t", 2.0, 1.5, 2.5)])]),
                        experiment("x.other", "C98", [point({"n": "1"}, [("t", 0.5, 0.4, 0.6)], exp="x.other")]),
                        experiment("x.none", "", [point({"n": "1"}, [("t", 0.5, 0.4, 0.6)], exp="x.none")]),
                        experiment("x.unlisted", "C99", [point({"n": "1"}, [("t", 0.5, 0.4, 0.6)], exp="x.unlisted")])])
        res = judge(cat, run)
        self.assertEqual(res["verdict"], claims.HELD)
        self.assertEqual({m["experiment"] for m in res["measured"]}, {"x.y"})
        self.assertIn("x.other: tests C98, not C99: not counted", res["excluded"])
        self.assertIn("x.n*: not in this run", res["absent"])  # x.none tests no claim: a glob skips it
        self.assertTrue(any(x.startswith("x.unlisted: declares C99 but claims.json does not list it")
                            for x in res["excluded"]), res["excluded"])

    def test_c6_is_decided_only_by_pinned_memory_and_its_analogue(self):
        doc = {c["id"]: c for c in claims.load_claims(CATALOGUE)["claims"]}
        c6 = doc["C6"]
        named = {x["name"] for x in c6["experiments"]} | {chk["experiment"] for chk in c6["verdict"]["checks"]}
        self.assertEqual(named, {"copy.h2d", "copy.d2h", "copy.page_state"})
        page_state = next(x for x in c6["experiments"] if x["name"] == "copy.page_state")
        self.assertIn("pinned", page_state["analogue"])  # the argument, shown after a "CPU analogue" label
        # A run that still records copy.stores as C6 (the reference run predates the fix): not counted.
        worse = point({"bytes": "4096"}, [("nontemporal", 0.1, 0.09, 0.11)], exp="copy.stores")
        better = point({"bytes": "4096"}, [("prefaulted", 100.0, 90.0, 110.0)], exp="copy.page_state")
        gpu = unsupported_point("copy.h2d", "no CUDA device")
        run = make_run([experiment("copy.stores", "C6", [worse]), experiment("copy.page_state", "C6", [better]),
                        experiment("copy.h2d", "C6", [gpu]), experiment("copy.d2h", "C6", [gpu])])
        res = claims.judge_all({"claims": [c6]}, run)[0]
        self.assertEqual(res["verdict"], claims.HELD)
        self.assertTrue(res["analogue_only"])
        self.assertNotIn("copy.stores", {m["experiment"] for m in res["measured"]})

    def test_absent_and_planned(self):
        cat = catalogue([{"experiment": "copy.h2d", "test": "better"}],
                        experiments=[{"name": "copy.h2d", "planned": True}])
        res = judge(cat, make_run([]))
        self.assertEqual(res["verdict"], claims.NOT_RUN)
        self.assertIn("planned, not implemented yet", res["why"])
        cat = catalogue([{"experiment": "copy.h2d", "test": "better"}])
        self.assertIn("not in this run", judge(cat, make_run([]))["why"])

    def test_listed_experiment_claiming_the_id_gets_the_default_rule(self):
        cat = catalogue([], experiments=[{"name": "new.thing"}])
        run = make_run([experiment("new.thing", "C99", [point({"n": "1"}, [("t", 3.0, 2.0, 4.0)])])])
        res = judge(cat, run)
        self.assertEqual(res["verdict"], claims.HELD)
        self.assertEqual(res["measured"][0]["experiment"], "new.thing")
        # Not listed in claims.json: named, not counted.
        res = judge(catalogue([]), run)
        self.assertEqual(res["verdict"], claims.NOT_RUN)
        self.assertEqual(res["measured"], [])
        self.assertEqual(len(res["excluded"]), 1)

    def test_glob_skips_experiments_of_other_claims(self):
        cat = catalogue([{"experiment": "precision.*", "test": "better"}])
        run = make_run([experiment("precision.a", "C99", [point({"n": "1"}, [("t", 3.0, 2.0, 4.0)])]),
                        experiment("precision.b", "C98", [point({"n": "1"}, [("t", 0.3, 0.2, 0.4)])])])
        self.assertEqual(judge(cat, run)["verdict"], claims.HELD)

    def test_environment_claim(self):
        cat = {"claims": [{"id": "C17", "claim": "c", "verdict": {"kind": "environment", "field": "gpu_compute_capability",
                                                                  "absent_reason_field": "gpu_unavailable_reason"}}]}
        res = judge(cat, make_run([], {"gpu_compute_capability": "9.0", "gpu_name": "H100"}))
        self.assertEqual(res["verdict"], claims.RECORDED)
        self.assertIn("has tensor cores", res["why"])
        res = judge(cat, make_run([], {"gpu_compute_capability": "", "gpu_unavailable_reason": "no CUDA device"}))
        self.assertEqual((res["verdict"], res["why"]), (claims.NOT_TESTABLE, "no CUDA device"))

    def test_bad_catalogue_is_bad_input(self):
        from pairbench_report.errors import BadInput
        path = os.path.join(tmpdir(self), "claims.json")
        with open(path, "w") as f:
            json.dump({"claims": [{"id": "C1", "claim": "x", "verdict": {"checks": [{"experiment": "a", "test": "maybe"}]}}]}, f)
        with self.assertRaises(BadInput) as ctx:
            claims.load_claims(path)
        self.assertIn("checks[0].test", str(ctx.exception))


if __name__ == "__main__":
    unittest.main()
