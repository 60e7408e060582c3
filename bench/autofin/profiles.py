"""User profiles: who asks the benchmark questions (``DIR/profiles.json``).

A profile is the ``user_profile`` of a question's context: role, region, department (a brand
code, or ``ALL`` for group-wide roles), default currency (always the region's, see the currency
rules) and caliber. Executives ask tersely; analysts and controllers spell things out.
"""

from __future__ import annotations

from typing import Any

from bench.autofin.catalog import region

# user, name, title, role, region, department, caliber
_PEOPLE = (
    ("e.lindqvist", "Eva Lindqvist", "Group CFO", "executive", "HQ", "ALL", "A"),
    ("m.dubois", "Marc Dubois", "President Europe", "executive", "EUR", "ALL", "A"),
    ("h.zhang", "Hui Zhang", "President Greater China", "executive", "CHN", "ALL", "A"),
    ("c.miller", "Claire Miller", "Borealis brand president", "executive", "NAM", "BO", "A"),
    ("k.sato", "Kenji Sato", "Zephyr brand president", "executive", "APAC", "ZP", "A"),
    ("a.rossi", "Alessia Rossi", "Vega brand director", "executive", "EUR", "VG", "A"),
    ("l.wei", "Lin Wei", "Financial analyst", "analyst", "CHN", "NV", "A"),
    ("s.tanaka", "Sho Tanaka", "Financial analyst", "analyst", "APAC", "ZP", "A"),
    ("r.garcia", "Rosa Garcia", "Financial analyst", "analyst", "LAM", "OR", "A"),
    ("j.becker", "Jonas Becker", "Financial analyst", "analyst", "EUR", "AU", "A"),
    ("d.khan", "Daniyal Khan", "Financial analyst", "analyst", "MEA", "HX", "A"),
    ("t.nguyen", "Thu Nguyen", "FP&A analyst", "analyst", "HQ", "ALL", "A"),
    ("a.hughes", "Amelia Hughes", "Brand controller", "controller", "UKI", "AU", "B"),
    ("j.okafor", "James Okafor", "Brand controller", "controller", "MEA", "TI", "B"),
    ("p.nair", "Priya Nair", "Brand controller", "controller", "APAC", "HX", "B"),
    ("b.schmidt", "Bernd Schmidt", "Group controller", "controller", "HQ", "ALL", "B"),
    ("m.santos", "Marta Santos", "Regional controller", "controller", "NAM", "TI", "B"),
    ("y.chen", "Yu Chen", "Regional controller", "controller", "CHN", "OR", "B"),
)


def profiles() -> list[dict[str, Any]]:
    """Every profile as a JSON-ready dict, in a fixed order."""
    return [
        {
            "user": user,
            "name": name,
            "title": title,
            "role": role,
            "region": region_code,
            "department": department,
            "currency": region(region_code).currency,
            "caliber": caliber,
        }
        for user, name, title, role, region_code, department, caliber in _PEOPLE
    ]


def user_profile(profile: dict[str, Any]) -> dict[str, Any]:
    """The part of a profile that goes into a question's context."""
    keys = ("user", "role", "region", "department", "currency", "caliber")
    return {key: profile[key] for key in keys}
