"""
The experiment harness of sb3-gpg's ``scripts/``: the paper's settings and periodic evaluations (``experiments``), one
resumable grid runner (``grid``) and the RL Zoo suite with its report (``suite``, ``suite_report``). It lives in the
repository beside the library, installed by an editable install for the tests, and is not shipped in the wheel.
"""
