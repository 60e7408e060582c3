"""The fixed world of AutoFin Motors: brands, vehicle models, geography, customers, report items.

Nothing here is random; `bench.autofin.world` draws the seeded parts (sales lines, exchange
rates) on top of it. Codes are what the tables hold; names and aliases are how people ask.
"""

from __future__ import annotations

from dataclasses import dataclass

DATABASE = "autofin"
COMPANY = "AutoFin Motors"
REPORTING_CURRENCIES = ("USD", "EUR", "CNY", "JPY", "GBP")
GROUP_CURRENCY = "USD"
CALIBERS = ("A", "B")
HQ = "HQ"


@dataclass(frozen=True)
class Brand:
    code: str
    name: str
    focus: str
    aliases: tuple[str, ...] = ()

    @property
    def suffix(self) -> str:
        return self.name.lower()

    @property
    def income_table(self) -> str:
        return f"income_{self.suffix}"

    @property
    def ledger_table(self) -> str:
        return f"sales_ledger_{self.suffix}"


@dataclass(frozen=True)
class Model:
    code: str
    name: str
    brand: str
    segment: str
    powertrain: str
    price_usd: int
    nickname: str


@dataclass(frozen=True)
class Region:
    code: str
    name: str
    currency: str
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True)
class Area:
    code: str
    name: str
    city: str


@dataclass(frozen=True)
class Country:
    code: str
    name: str
    region: str
    currency: str
    areas: tuple[Area, ...]
    weight: float = 1.0


@dataclass(frozen=True)
class CustomerGroup:
    code: str
    name: str
    kind: str  # dealer | fleet | public | direct | key_account | internal
    short: str
    regions: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True)
class ReportItem:
    code: str
    name: str
    level1: str
    order: int


BRANDS = (
    Brand("NV", "Nova", "mainstream compact cars", ("Nova brand",)),
    Brand("AU", "Aurora", "premium sedans and SUVs", ("Aurora brand",)),
    Brand("TI", "Titan", "pickups and light trucks", ("Titan trucks",)),
    Brand("ZP", "Zephyr", "battery-electric cars", ("Zephyr EV",)),
    Brand("OR", "Orion", "family SUVs", ("Orion SUV",)),
    Brand("VG", "Vega", "sports cars", ("Vega sports",)),
    Brand("HX", "Helix", "hybrid cars", ("Helix hybrids",)),
    Brand("BO", "Borealis", "vans, buses and commercial vehicles", ("Borealis commercial",)),
)

_M = Model
# fmt: off
MODELS = (
    _M("NV100", "Nova 100", "NV", "Compact", "ICE", 18_000, "Sprite"),
    _M("NV200", "Nova 200", "NV", "Compact", "HEV", 22_000, "Comet"),
    _M("NV300", "Nova 300", "NV", "Sedan", "ICE", 26_000, "Meteor"),
    _M("NVX5", "Nova X5", "NV", "SUV", "PHEV", 31_000, "Nebula"),
    _M("NVE1", "Nova e1", "NV", "Compact", "BEV", 29_000, "Spark"),
    _M("AU5", "Aurora 5", "AU", "Sedan", "ICE", 45_000, "Dawn"),
    _M("AU7", "Aurora 7", "AU", "Sedan", "PHEV", 62_000, "Halo"),
    _M("AUQ5", "Aurora Q5", "AU", "SUV", "ICE", 52_000, "Crest"),
    _M("AUQ8", "Aurora Q8", "AU", "SUV", "HEV", 78_000, "Zenith"),
    _M("AUE7", "Aurora E7", "AU", "Sedan", "BEV", 70_000, "Lumen"),
    _M("TI150", "Titan 150", "TI", "Pickup", "ICE", 38_000, "Bison"),
    _M("TI250", "Titan 250", "TI", "Pickup", "ICE", 46_000, "Mammoth"),
    _M("TI350", "Titan 350 HD", "TI", "Pickup", "ICE", 58_000, "Goliath"),
    _M("TIE1", "Titan E", "TI", "Pickup", "BEV", 64_000, "Thunder"),
    _M("TIC1", "Titan Cargo", "TI", "Van", "HEV", 41_000, "Atlas"),
    _M("ZP1", "Zephyr One", "ZP", "Compact", "BEV", 27_000, "Breeze"),
    _M("ZP3", "Zephyr Three", "ZP", "Sedan", "BEV", 39_000, "Gale"),
    _M("ZPS", "Zephyr S", "ZP", "SUV", "BEV", 48_000, "Cyclone"),
    _M("ZPX", "Zephyr X", "ZP", "SUV", "BEV", 66_000, "Tempest"),
    _M("ZPC", "Zephyr City", "ZP", "Compact", "PHEV", 21_000, "Whisper"),
    _M("OR3", "Orion 3", "OR", "SUV", "ICE", 30_000, "Hunter"),
    _M("OR5", "Orion 5", "OR", "SUV", "HEV", 36_000, "Belt"),
    _M("OR7", "Orion 7", "OR", "SUV", "PHEV", 44_000, "Rigel"),
    _M("OR9", "Orion 9", "OR", "SUV", "ICE", 55_000, "Betelgeuse"),
    _M("ORE", "Orion e", "OR", "SUV", "BEV", 50_000, "Bellatrix"),
    _M("VGR", "Vega R", "VG", "Sports", "ICE", 90_000, "Lyra"),
    _M("VGGT", "Vega GT", "VG", "Sports", "PHEV", 120_000, "Altair"),
    _M("VGS", "Vega Spider", "VG", "Sports", "ICE", 140_000, "Deneb"),
    _M("VGE", "Vega Electra", "VG", "Sports", "BEV", 110_000, "Arc"),
    _M("VGC", "Vega Coupe", "VG", "Sports", "ICE", 75_000, "Swift"),
    _M("HX1", "Helix 1", "HX", "Compact", "HEV", 24_000, "Twist"),
    _M("HX2", "Helix 2", "HX", "Sedan", "HEV", 29_000, "Coil"),
    _M("HX4", "Helix 4", "HX", "SUV", "PHEV", 37_000, "Spiral"),
    _M("HXM", "Helix MPV", "HX", "MPV", "HEV", 34_000, "Nest"),
    _M("HXP", "Helix Plus", "HX", "Sedan", "ICE", 33_000, "Vortex"),
    _M("BOV1", "Borealis V1", "BO", "Van", "ICE", 32_000, "Polar"),
    _M("BOV2", "Borealis V2", "BO", "Van", "BEV", 45_000, "Frost"),
    _M("BOCR", "Borealis Courier", "BO", "Van", "ICE", 28_000, "Tundra"),
    _M("BOB1", "Borealis Bus", "BO", "Bus", "ICE", 95_000, "Glacier"),
    _M("BOH1", "Borealis Hauler", "BO", "Truck", "HEV", 85_000, "Icebreaker"),
)
# fmt: on

REGIONS = (
    Region("HQ", "Headquarters", "USD", ("group HQ", "corporate centre")),
    Region("EUR", "Europe", "EUR", ("continental Europe", "EU region")),
    Region("UKI", "UK & Ireland", "GBP", ("British Isles", "UK and Ireland")),
    Region("NAM", "North America", "USD", ("NA region", "US and Canada")),
    Region("LAM", "Latin America", "USD", ("LATAM", "South America")),
    Region("CHN", "Greater China", "CNY", ("China region", "GC region")),
    Region("APAC", "Asia Pacific", "JPY", ("Asia-Pacific", "AP region")),
    Region("MEA", "Middle East & Africa", "USD", ("Middle East and Africa", "MEA region")),
)

_A = Area
# fmt: off
COUNTRIES = (
    Country("HQ", "Headquarters", "HQ", "EUR", (_A("HQ", "Headquarters", "Frankfurt"),)),
    Country("DE", "Germany", "EUR", "EUR", (
        _A("DE-N", "Northern Germany", "Hamburg"),
        _A("DE-S", "Southern Germany", "Munich"),
        _A("DE-W", "Western Germany", "Cologne"),
    ), 4.0),
    Country("FR", "France", "EUR", "EUR", (
        _A("FR-P", "Paris Region", "Paris"), _A("FR-S", "Southern France", "Lyon"),
    ), 2.5),
    Country("IT", "Italy", "EUR", "EUR", (
        _A("IT-N", "Northern Italy", "Milan"), _A("IT-C", "Central Italy", "Rome"),
    ), 2.0),
    Country("ES", "Spain", "EUR", "EUR", (
        _A("ES-C", "Central Spain", "Madrid"), _A("ES-E", "Eastern Spain", "Barcelona"),
    ), 1.5),
    Country("GB", "United Kingdom", "UKI", "GBP", (
        _A("GB-L", "Greater London", "London"),
        _A("GB-N", "Northern England", "Manchester"),
        _A("GB-S", "Scotland", "Glasgow"),
    ), 2.5),
    Country("IE", "Ireland", "UKI", "EUR", (_A("IE-D", "Dublin Area", "Dublin"),), 0.8),
    Country("US", "United States", "NAM", "USD", (
        _A("US-E", "East Coast", "New York"),
        _A("US-W", "West Coast", "Los Angeles"),
        _A("US-C", "Central US", "Chicago"),
        _A("US-S", "Southern US", "Houston"),
    ), 5.0),
    Country("CA", "Canada", "NAM", "CAD", (
        _A("CA-E", "Eastern Canada", "Toronto"), _A("CA-W", "Western Canada", "Vancouver"),
    ), 1.5),
    Country("MX", "Mexico", "NAM", "MXN", (_A("MX-C", "Central Mexico", "Mexico City"),), 1.0),
    Country("BR", "Brazil", "LAM", "BRL", (
        _A("BR-SE", "Southeast Brazil", "Sao Paulo"), _A("BR-S", "Southern Brazil", "Curitiba"),
    ), 1.5),
    Country("CL", "Chile", "LAM", "CLP", (_A("CL-M", "Santiago Metro", "Santiago"),), 0.7),
    Country("CN", "China", "CHN", "CNY", (
        _A("CN-N", "North China", "Beijing"),
        _A("CN-E", "East China", "Shanghai"),
        _A("CN-S", "South China", "Guangzhou"),
        _A("CN-W", "West China", "Chengdu"),
    ), 5.0),
    Country("JP", "Japan", "APAC", "JPY", (
        _A("JP-K", "Kanto", "Tokyo"), _A("JP-KS", "Kansai", "Osaka"),
    ), 2.0),
    Country("KR", "South Korea", "APAC", "KRW", (_A("KR-C", "Capital Area", "Seoul"),), 1.2),
    Country("AU", "Australia", "APAC", "AUD", (
        _A("AU-E", "Eastern Australia", "Sydney"), _A("AU-W", "Western Australia", "Perth"),
    ), 1.2),
    Country("IN", "India", "APAC", "INR", (
        _A("IN-N", "North India", "Delhi"), _A("IN-W", "West India", "Mumbai"),
    ), 1.5),
    Country("AE", "United Arab Emirates", "MEA", "AED", (_A("AE-D", "Dubai", "Dubai"),), 0.8),
    Country("SA", "Saudi Arabia", "MEA", "SAR", (_A("SA-R", "Riyadh Province", "Riyadh"),), 0.8),
    Country("ZA", "South Africa", "MEA", "ZAR", (_A("ZA-G", "Gauteng", "Johannesburg"),), 0.8),
)

CUSTOMER_GROUPS = (
    CustomerGroup("CG_MERIDIAN", "Meridian Motor Group", "dealer", "Meridian Motors",
                  ("EUR", "UKI"), ("Meridian", "Meridian dealers")),
    CustomerGroup("CG_LIBERTY", "Liberty Auto Partners", "dealer", "Liberty Auto",
                  ("NAM",), ("Liberty", "Liberty dealers")),
    CustomerGroup("CG_PAMPA", "Pampa Motores", "dealer", "Pampa Motores", ("LAM",),
                  ("Pampa",)),
    CustomerGroup("CG_HUAXIA", "Huaxia Auto Trading", "dealer", "Huaxia Auto", ("CHN",),
                  ("Huaxia", "Huaxia dealers")),
    CustomerGroup("CG_SAKURA", "Sakura Pacific Dealers", "dealer", "Sakura Pacific",
                  ("APAC",), ("Sakura", "Sakura dealers")),
    CustomerGroup("CG_OASIS", "Oasis Automotive", "dealer", "Oasis Automotive", ("MEA",),
                  ("Oasis", "Oasis dealers")),
    CustomerGroup("CG_FLEETONE", "FleetOne Leasing", "fleet", "FleetOne",
                  aliases=("FleetOne", "Fleet One", "the leasing company")),
    CustomerGroup("CG_PUBLIC", "Public Sector Accounts", "public", "Public Sector",
                  aliases=("government buyers", "public sector")),
    CustomerGroup("CG_DIRECT", "Direct Consumers", "direct", "Direct",
                  aliases=("private buyers", "direct consumers")),
    CustomerGroup("CG_GKA", "Global Key Accounts", "key_account", "GKA",
                  aliases=("GKA", "key accounts")),
    CustomerGroup("CG_INTERNAL", "Group Internal", "internal", "Group Internal",
                  aliases=("intercompany", "internal customers")),
)
# fmt: on

FLEET_COUNTRIES = ("DE", "FR", "GB", "US", "CN", "AU", "BR", "AE", "IT", "CA")
PUBLIC_COUNTRIES = ("DE", "US", "CN", "JP", "SA", "GB", "IN")
KEY_ACCOUNT_CUSTOMERS = (("CG_GKA", "GKA Rental Alliance"), ("CG_GKA", "GKA RideShare Global"))
INTERNAL_CUSTOMERS = (("CG_INTERNAL", "Internal Group Services"),)

CHANNELS_BY_KIND = {
    "dealer": ("Dealer",),
    "fleet": ("Fleet",),
    "public": ("Fleet",),
    "direct": ("Online", "Retail Store", "Kiosk"),
    "key_account": ("Fleet",),
    "internal": ("Intercompany",),
}
RETAIL_CHANNELS = ("Retail Store", "Kiosk")

REPORT_ITEMS = (
    ReportItem("REV_VEH", "Vehicle sales revenue", "Revenue", 10),
    ReportItem("REV_SVC", "Parts and service revenue", "Revenue", 20),
    ReportItem("COGS_VEH", "Vehicle cost of sales", "Cost of sales", 30),
    ReportItem("COGS_SVC", "Parts and service cost of sales", "Cost of sales", 40),
    ReportItem("SELL_EXP", "Selling expenses", "Operating expenses", 50),
    ReportItem("ADMIN_EXP", "Administrative expenses", "Operating expenses", 60),
    ReportItem("RND_EXP", "R&D expenses", "Operating expenses", 70),
)
LEVEL1 = ("Revenue", "Cost of sales", "Operating expenses")
NEV_POWERTRAINS = ("BEV", "PHEV")

# Starting exchange rates, units of currency per USD.
# fmt: off
FX_START = {
    "USD": 1.0, "EUR": 0.90, "GBP": 0.78, "CNY": 6.9, "JPY": 108.0, "CAD": 1.33,
    "MXN": 19.5, "BRL": 4.1, "CLP": 780.0, "KRW": 1170.0, "AUD": 1.45, "INR": 71.0,
    "AED": 3.6725, "SAR": 3.75, "ZAR": 14.5,
}
# fmt: on
PEGGED = ("USD", "AED", "SAR")


def brand(code: str) -> Brand:
    return next(b for b in BRANDS if b.code == code)


def region(code: str) -> Region:
    return next(r for r in REGIONS if r.code == code)


def country(code: str) -> Country:
    return next(c for c in COUNTRIES if c.code == code)


def model(code: str) -> Model:
    return next(m for m in MODELS if m.code == code)


def customer_group(code: str) -> CustomerGroup:
    return next(g for g in CUSTOMER_GROUPS if g.code == code)


def models_of(brand_code: str) -> list[Model]:
    return [m for m in MODELS if m.brand == brand_code]


def area_index() -> dict[str, tuple[Country, Area]]:
    """Area code -> (country, area)."""
    return {area.code: (c, area) for c in COUNTRIES for area in c.areas}
