/**
 * Invented vendors (no real data set): name as printed on the receipt, where they are, what they
 * sell, and how a bank statement shows them.
 */

export type Category =
  | "cafe"
  | "restaurant"
  | "hardware"
  | "office"
  | "gas"
  | "software"
  | "grocery"
  | "pharmacy"
  | "books"
  | "courier"
  | "parking"
  | "electronics"
  | "florist"
  | "auto";

/** A tax, rate in thousandths of a percent (13% = 13000, QST 9.975% = 9975). */
export interface TaxRate {
  label: string;
  rate: number;
}

export interface Region {
  code: string;
  country: "CA" | "US";
  taxes: TaxRate[];
  /** The registration-number label printed in the header. */
  regLabel: string | null;
  postal: (digits: string, letters: string) => string;
}

const caPostal = (d: string, l: string, first: string) => `${first}${d[0]}${l[0]} ${d[1]}${l[1]}${d[2]}`;

export const REGIONS: Record<string, Region> = {
  ON: { code: "ON", country: "CA", taxes: [{ label: "HST", rate: 13000 }], regLabel: "HST REG #", postal: (d, l) => caPostal(d, l, "M") },
  BC: { code: "BC", country: "CA", taxes: [{ label: "GST", rate: 5000 }, { label: "PST", rate: 7000 }], regLabel: "GST REG #", postal: (d, l) => caPostal(d, l, "V") },
  QC: { code: "QC", country: "CA", taxes: [{ label: "GST", rate: 5000 }, { label: "QST", rate: 9975 }], regLabel: "TPS/GST #", postal: (d, l) => caPostal(d, l, "H") },
  AB: { code: "AB", country: "CA", taxes: [{ label: "GST", rate: 5000 }], regLabel: "GST #", postal: (d, l) => caPostal(d, l, "T") },
  NS: { code: "NS", country: "CA", taxes: [{ label: "HST", rate: 15000 }], regLabel: "HST NO.", postal: (d, l) => caPostal(d, l, "B") },
  MB: { code: "MB", country: "CA", taxes: [{ label: "GST", rate: 5000 }, { label: "PST", rate: 7000 }], regLabel: "GST REG NO", postal: (d, l) => caPostal(d, l, "R") },
  SK: { code: "SK", country: "CA", taxes: [{ label: "GST", rate: 5000 }, { label: "PST", rate: 6000 }], regLabel: "GST #", postal: (d, l) => caPostal(d, l, "S") },
  WA: { code: "WA", country: "US", taxes: [{ label: "SALES TAX", rate: 10100 }], regLabel: null, postal: (d) => `98${d}` },
  NY: { code: "NY", country: "US", taxes: [{ label: "SALES TAX", rate: 8875 }], regLabel: null, postal: (d) => `14${d}` },
  VT: { code: "VT", country: "US", taxes: [{ label: "MEALS TAX", rate: 9000 }], regLabel: null, postal: (d) => `05${d}` },
  PA: { code: "PA", country: "US", taxes: [{ label: "SALES TAX", rate: 7000 }], regLabel: null, postal: (d) => `15${d}` },
  /** Online services: GST only (registered non-resident supplier). */
  WEB_CA: { code: "ON", country: "CA", taxes: [{ label: "GST/HST", rate: 13000 }], regLabel: "GST/HST #", postal: (d, l) => caPostal(d, l, "M") },
  WEB_US: { code: "CA", country: "US", taxes: [], regLabel: null, postal: (d) => `94${d}` },
};

export interface Vendor {
  name: string;
  category: Category;
  region: keyof typeof REGIONS;
  city: string;
  street: string;
  /** How the bank shows the merchant, before store number / city. */
  bankBase: string;
  /** Card processor prefix on the statement ("SQ *", "TST* ", "PAYPAL *"…), if any. */
  bankPrefix?: string;
  /** Store number on statements. */
  store?: string;
  /** Online merchants: shown with a phone or domain instead of a city. */
  bankSuffix?: string;
  web?: string;
}

export const VENDORS: Vendor[] = [
  { name: "Maple Leaf Café", category: "cafe", region: "ON", city: "Toronto", street: "418 Queen St W", bankBase: "MAPLE LEAF CAFE", store: "0412" },
  { name: "Northern Grind Coffee Co.", category: "cafe", region: "BC", city: "Vancouver", street: "1290 Commercial Dr", bankBase: "NORTHERN GRIND COFFEE", bankPrefix: "SQ *" },
  { name: "Bluewater Bakery & Café", category: "cafe", region: "NS", city: "Halifax", street: "77 Spring Garden Rd", bankBase: "BLUEWATER BAKERY", bankPrefix: "SQ *" },
  { name: "Café Ste-Catherine", category: "cafe", region: "QC", city: "Montreal", street: "2150 rue Ste-Catherine O", bankBase: "CAFE STE-CATHERINE" },
  { name: "Prairie Bean Roasters", category: "cafe", region: "AB", city: "Calgary", street: "903 17 Ave SW", bankBase: "PRAIRIE BEAN ROASTE" },
  { name: "Harbourfront Bistro", category: "restaurant", region: "ON", city: "Toronto", street: "235 Queens Quay W", bankBase: "HARBOURFRONT BISTR", bankPrefix: "TST* " },
  { name: "The Rusty Anchor Pub", category: "restaurant", region: "NS", city: "Halifax", street: "1869 Upper Water St", bankBase: "RUSTY ANCHOR PUB" },
  { name: "Golden Dragon Kitchen", category: "restaurant", region: "BC", city: "Richmond", street: "8391 Alexandra Rd", bankBase: "GOLDEN DRAGON KITCH" },
  { name: "Bella Notte Trattoria", category: "restaurant", region: "ON", city: "Ottawa", street: "312 Preston St", bankBase: "BELLA NOTTE TRATT", bankPrefix: "TST* " },
  { name: "Smokehouse 44 BBQ", category: "restaurant", region: "AB", city: "Edmonton", street: "10544 82 Ave NW", bankBase: "SMOKEHOUSE 44" },
  { name: "Le Petit Bouchon", category: "restaurant", region: "QC", city: "Quebec", street: "58 rue St-Jean", bankBase: "LE PETIT BOUCHON" },
  { name: "Sakura Ramen House", category: "restaurant", region: "WA", city: "Seattle", street: "516 S Jackson St", bankBase: "SAKURA RAMEN HSE" },
  { name: "Granite City Diner", category: "restaurant", region: "VT", city: "Burlington", street: "140 Church St", bankBase: "GRANITE CITY DINER" },
  { name: "Cedar Ridge Hardware", category: "hardware", region: "ON", city: "Barrie", street: "560 Bayfield St", bankBase: "CEDAR RIDGE HDWR", store: "118" },
  { name: "Ironwood Building Supply", category: "hardware", region: "AB", city: "Red Deer", street: "6721 50 Ave", bankBase: "IRONWOOD BLDG SUPPLY", store: "07" },
  { name: "Lakeside Home & Hardware", category: "hardware", region: "MB", city: "Winnipeg", street: "1455 Pembina Hwy", bankBase: "LAKESIDE HOME HARDW" },
  { name: "Pacific Lumber & Tool", category: "hardware", region: "BC", city: "Surrey", street: "15210 104 Ave", bankBase: "PACIFIC LUMBER TOOL", store: "3" },
  { name: "Summit Office Supply", category: "office", region: "ON", city: "Mississauga", street: "2980 Dundas St W", bankBase: "SUMMIT OFFICE SUP", store: "2207" },
  { name: "PaperTrail Stationers", category: "office", region: "BC", city: "Victoria", street: "1012 Government St", bankBase: "PAPERTRAIL STATION" },
  { name: "Inkwell Print & Copy", category: "office", region: "QC", city: "Laval", street: "1600 boul Le Corbusier", bankBase: "INKWELL PRINT COPY" },
  { name: "DeskPro Business Depot", category: "office", region: "NY", city: "Buffalo", street: "2255 Delaware Ave", bankBase: "DESKPRO BUS DEPOT", store: "0391" },
  { name: "Keystone Print Shop", category: "office", region: "PA", city: "Pittsburgh", street: "411 Smithfield St", bankBase: "KEYSTONE PRINT SHP" },
  { name: "Northstar Fuel", category: "gas", region: "ON", city: "Kingston", street: "1201 Princess St", bankBase: "NORTHSTAR FUEL", store: "2231" },
  { name: "Trans-Canada Petro Stop", category: "gas", region: "MB", city: "Brandon", street: "3400 Victoria Ave E", bankBase: "TRANSCDA PETRO STOP" },
  { name: "Rocky Mountain Gas Bar", category: "gas", region: "AB", city: "Canmore", street: "1702 Bow Valley Trl", bankBase: "ROCKY MTN GAS BAR" },
  { name: "Coastline Gas & Go", category: "gas", region: "WA", city: "Bellingham", street: "4150 Meridian St", bankBase: "COASTLINE GAS GO", store: "14" },
  { name: "CloudNimbus Software", category: "software", region: "WEB_US", city: "San Francisco", street: "500 Howard St Suite 300", bankBase: "CLOUDNIMBUS.COM", bankSuffix: "855-555-0143 CA", web: "cloudnimbus.com" },
  { name: "Ledgerly Apps Inc.", category: "software", region: "WEB_CA", city: "Toronto", street: "155 University Ave", bankBase: "LEDGERLY APPS", bankSuffix: "TORONTO ON", web: "ledgerly.app" },
  { name: "PixelForge Design Tools", category: "software", region: "WEB_US", city: "Austin", street: "98 San Jacinto Blvd", bankBase: "PIXELFORGE", bankPrefix: "PAYPAL *", bankSuffix: "4029357733", web: "pixelforge.io" },
  { name: "SendSprout Mail", category: "software", region: "WEB_US", city: "Denver", street: "1400 Wewatta St", bankBase: "SENDSPROUT", bankSuffix: "SENDSPROUT.CO CO", web: "sendsprout.co" },
  { name: "HostHaven Web Services", category: "software", region: "WEB_CA", city: "Waterloo", street: "420 Weber St N", bankBase: "HOSTHAVEN WEB SVCS", bankSuffix: "WATERLOO ON", web: "hosthaven.ca" },
  { name: "Greenleaf Grocers", category: "grocery", region: "ON", city: "Guelph", street: "35 Harvard Rd", bankBase: "GREENLEAF GROCERS", store: "012" },
  { name: "Fraser Valley Market", category: "grocery", region: "BC", city: "Abbotsford", street: "32900 S Fraser Way", bankBase: "FRASER VLY MARKET" },
  { name: "Dépanneur Mont-Royal", category: "grocery", region: "QC", city: "Montreal", street: "4410 av du Mont-Royal E", bankBase: "DEPANNEUR MONT ROYA" },
  { name: "Wellness First Pharmacy", category: "pharmacy", region: "AB", city: "Calgary", street: "8180 Macleod Trl SE", bankBase: "WELLNESS FIRST PHM", store: "36" },
  { name: "Chapter & Verse Books", category: "books", region: "ON", city: "Toronto", street: "789 Bloor St W", bankBase: "CHAPTER AND VERSE" },
  { name: "Swift Courier Services", category: "courier", region: "ON", city: "Toronto", street: "40 Carl Hall Rd", bankBase: "SWIFT COURIER SVC" },
  { name: "ParkRight Parking", category: "parking", region: "BC", city: "Vancouver", street: "700 W Georgia St", bankBase: "PARKRIGHT", bankSuffix: "LOT 1142 VANCOUVER BC" },
  { name: "Bytes & Bits Electronics", category: "electronics", region: "MB", city: "Winnipeg", street: "1570 Regent Ave W", bankBase: "BYTES AND BITS ELEC" },
  { name: "Bloom & Stem Florists", category: "florist", region: "NS", city: "Dartmouth", street: "114 Portland St", bankBase: "BLOOM STEM FLORIST", bankPrefix: "SQ *" },
  { name: "Riverbend Auto Service", category: "auto", region: "SK", city: "Saskatoon", street: "2215 Idylwyld Dr N", bankBase: "RIVERBEND AUTO SVC" },
];

/** Items by category: [description, min cents, max cents, max quantity]. */
export const ITEMS: Record<Category, [string, number, number, number][]> = {
  cafe: [["Latte", 425, 595, 3], ["Americano", 295, 395, 3], ["Cappuccino", 450, 575, 2], ["Drip Coffee", 225, 325, 4], ["Blueberry Muffin", 325, 425, 3], ["Butter Croissant", 350, 475, 4], ["Breakfast Sandwich", 695, 995, 2], ["Chai Tea Latte", 475, 595, 2], ["Oat Milk", 75, 85, 2], ["Cinnamon Bun", 395, 495, 2]],
  restaurant: [["Caesar Salad", 1295, 1695, 2], ["Margherita Pizza", 1695, 2195, 1], ["Tonkotsu Ramen", 1595, 1995, 3], ["Fish & Chips", 1895, 2395, 2], ["Club Sandwich", 1495, 1895, 2], ["Pad Thai", 1595, 1895, 2], ["Brisket Platter", 2495, 3295, 1], ["Soup of the Day", 795, 995, 2], ["Craft Beer Pint", 795, 995, 4], ["House Red 6oz", 1100, 1400, 3], ["Soda", 295, 395, 3], ["Cheesecake", 895, 1095, 2], ["Poutine", 995, 1395, 2]],
  hardware: [["2x4x8 SPF Stud", 489, 689, 12], ["Wood Screws #8 1-1/4in", 899, 1299, 3], ["Interior Paint 3.78L", 4499, 6299, 2], ["Paint Roller Kit", 1299, 1799, 1], ["Extension Cord 25ft", 1999, 2899, 1], ["LED Bulb 4pk", 1199, 1699, 3], ["Caulk Silicone White", 699, 999, 4], ["Drywall Anchors 20pk", 549, 799, 3], ["Utility Knife", 999, 1499, 1], ["Duct Tape 48mm", 799, 1099, 2], ["Work Gloves L", 1299, 1899, 2]],
  office: [["Copy Paper 8.5x11 500sh", 799, 1199, 5], ["Ballpoint Pens 12pk", 599, 899, 3], ["Toner Cartridge Black", 7999, 12999, 1], ["File Folders 100pk", 1499, 2199, 2], ["Sticky Notes 3x3 6pk", 699, 999, 3], ["Stapler Desktop", 1299, 1999, 1], ["Shipping Labels 30/sh", 2499, 3499, 1], ["Colour Copies", 25, 45, 60], ["B&W Copies", 8, 15, 120], ["Binder 1in", 499, 799, 4], ["USB Flash Drive 64GB", 1499, 2299, 2]],
  gas: [["Coffee Lg", 199, 249, 2], ["Windshield Washer Fluid", 499, 699, 1], ["Chocolate Bar", 199, 279, 2], ["Bottled Water", 179, 249, 3], ["Car Wash Basic", 999, 1299, 1]],
  software: [["Pro plan (monthly)", 1200, 4900, 1], ["Team plan - 3 seats", 2700, 8700, 1], ["Additional storage 100 GB", 199, 499, 1], ["Starter plan (monthly)", 900, 1900, 1], ["Business plan (annual)", 9900, 29900, 1], ["Domain renewal", 1499, 2499, 2]],
  grocery: [["Bananas /kg", 149, 199, 2], ["Milk 2% 4L", 599, 699, 2], ["Bread Whole Wheat", 349, 499, 2], ["Coffee Beans 1kg", 1799, 2499, 1], ["Paper Towels 6pk", 999, 1399, 1], ["Eggs Large Dozen", 429, 599, 2], ["Orange Juice 1.75L", 499, 649, 2], ["Cheddar Block 400g", 699, 899, 2], ["Dish Soap", 399, 549, 1]],
  pharmacy: [["Hand Sanitizer 500ml", 599, 899, 2], ["First Aid Kit", 1999, 2999, 1], ["Vitamin D 1000IU", 1199, 1599, 1], ["Tissues 6pk", 899, 1199, 1], ["Bandages 30ct", 549, 749, 2]],
  books: [["Paperback - Fiction", 1899, 2499, 2], ["Accounting Made Simple", 2499, 3299, 1], ["Notebook Hardcover", 1499, 1999, 2], ["Greeting Card", 499, 699, 3], ["Hardcover - Business", 2999, 3999, 1]],
  courier: [["Same-day delivery 0-5kg", 1899, 2899, 2], ["Envelope Overnight", 1299, 1799, 3], ["Box Ground 5-10kg", 2499, 3999, 1], ["Fuel surcharge", 199, 399, 1]],
  parking: [["Parking 2 hrs", 800, 1200, 1], ["Parking Daily Max", 1800, 2600, 1], ["Parking Evening Flat", 700, 1000, 1]],
  electronics: [["HDMI Cable 2m", 1499, 2499, 2], ["Wireless Mouse", 2499, 3999, 1], ["USB-C Charger 65W", 4499, 6499, 1], ["Keyboard", 4999, 8999, 1], ["AA Batteries 8pk", 899, 1299, 2], ["Monitor 24in", 17999, 24999, 1]],
  florist: [["Mixed Bouquet", 3999, 6999, 1], ["Local Delivery", 1000, 1500, 1], ["Potted Orchid", 3499, 4999, 1], ["Greeting Card", 399, 599, 1]],
  auto: [["Oil Change Synthetic", 8999, 11999, 1], ["Tire Rotation", 3999, 4999, 1], ["Wiper Blades pr", 2999, 3999, 1], ["Shop Supplies", 499, 999, 1], ["Cabin Air Filter", 3499, 4999, 1]],
};
